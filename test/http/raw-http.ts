// Raw HTTP/1.1 over a TCP socket, for requests fetch() refuses to send (unknown methods, broken
// header lines, several Host lines, absolute-form targets) and for pipelining on one connection.
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Complete responses at the start of `text` (each must carry Content-Length, as ours do). */
export function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) return responses;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (rest.length < end + 4 + length) return responses;
    const body = rest.slice(end + 4, end + 4 + length);
    let json: unknown;
    try {
      json = body ? JSON.parse(body) : undefined;
    } catch {
      json = undefined;
    }
    responses.push({ status: Number(statusLine.split(' ')[1]), headers, body, json });
    rest = rest.slice(end + 4 + length);
  }
}

/** A connection that collects what the server sends. */
export class RawConnection {
  readonly socket: Socket;
  received = '';
  closedByServer = false;
  readonly #closed: Promise<void>;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (this.received += chunk));
    socket.on('end', () => (this.closedByServer = true));
    this.#closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static async open(port: number): Promise<RawConnection> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.on('error', () => undefined); // a reset after the server closed is expected here
    return new RawConnection(socket);
  }

  write(text: string): void {
    this.socket.write(text, 'latin1');
  }

  /** Waits until `count` complete responses arrived (or the server closed the connection). */
  async responses(count = 1): Promise<RawResponse[]> {
    const deadline = Date.now() + 10_000;
    while (parseResponses(this.received).length < count && !this.socket.destroyed) {
      if (Date.now() > deadline)
        throw new Error(`no complete response: ${JSON.stringify(this.received.slice(0, 200))}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return parseResponses(this.received);
  }

  /** Waits until the server has closed the connection. */
  async closed(): Promise<void> {
    await this.#closed;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Sends `text` on a new connection and returns the first response; the connection is then dropped. */
export async function rawRequest(port: number, text: string): Promise<RawResponse & { closedByServer: boolean }> {
  const connection = await RawConnection.open(port);
  connection.write(text);
  const [response] = await connection.responses(1);
  if (!response) throw new Error(`no complete response: ${JSON.stringify(connection.received.slice(0, 200))}`);
  // A server that closes sends FIN right after the response: wait for it only when it said so.
  if (response.headers.connection === 'close') await connection.closed();
  const closedByServer = connection.closedByServer;
  connection.destroy();
  return { ...response, closedByServer };
}
