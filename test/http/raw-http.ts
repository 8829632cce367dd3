// Raw HTTP/1.1 over a TCP socket, for requests fetch() refuses to send (unknown methods, broken
// header lines, several Host lines, absolute-form targets) and for pipelining on one connection.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { waitUntil, withDeadline } from '../helpers/deadline.ts';

/**
 * How long connecting, and waiting for the server to close, may take unless the caller says otherwise:
 * on loopback either happens in milliseconds, so a wait this long means the server is stuck.
 */
export const RAW_DEADLINE_MS = 15_000;

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

  /** Connects within `ms`; a connection error rejects, and so does a connect still pending at the deadline. */
  static async open(port: number, ms = RAW_DEADLINE_MS): Promise<RawConnection> {
    const socket = connect(port, '127.0.0.1');
    try {
      await withDeadline(once(socket, 'connect'), ms, () => `connecting to 127.0.0.1:${port} (still pending)`);
    } catch (err) {
      socket.destroy();
      throw err;
    }
    socket.on('error', () => undefined); // a reset after the server closed is expected here
    return new RawConnection(socket);
  }

  write(text: string): void {
    this.socket.write(text, 'latin1');
  }

  /** Waits until `count` complete responses arrived (or the server closed the connection). */
  async responses(count = 1): Promise<RawResponse[]> {
    await waitUntil(
      () => parseResponses(this.received).length >= count || this.socket.destroyed,
      10_000,
      () => `no complete response: ${JSON.stringify(this.received.slice(0, 200))}`,
      0,
    );
    return parseResponses(this.received);
  }

  /** Waits until the connection is closed; a DeadlineError, with what was received, if it is still open after `ms`. */
  async closed(ms = RAW_DEADLINE_MS): Promise<void> {
    await withDeadline(
      this.#closed,
      ms,
      () => `the server closing the connection; still open, received: ${JSON.stringify(this.received.slice(0, 500))}`,
    );
  }

  /** The same as closed(ms), for callers that name the deadline. */
  closedWithin(ms: number): Promise<void> {
    return this.closed(ms);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * Sends `text` on a new connection and returns the first response; the connection is then dropped. Each
 * wait (connecting, the server closing after `Connection: close`) fails after `ms`.
 */
export async function rawRequest(
  port: number,
  text: string,
  ms = RAW_DEADLINE_MS,
): Promise<RawResponse & { closedByServer: boolean }> {
  const connection = await RawConnection.open(port, ms);
  try {
    connection.write(text);
    const [response] = await connection.responses(1);
    if (!response) throw new Error(`no complete response: ${JSON.stringify(connection.received.slice(0, 200))}`);
    // A server that closes sends FIN right after the response: wait for it only when it said so.
    if (response.headers.connection === 'close') await connection.closed(ms);
    return { ...response, closedByServer: connection.closedByServer };
  } finally {
    connection.destroy();
  }
}

/** An HTTP/1.1 request as text: a Host line, the given header lines in order, and Content-Length for a body. */
export function requestText(
  method: string,
  target: string,
  options: { headers?: [string, string][]; body?: string } = {},
): string {
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [name, value] of options.headers ?? []) lines.push(`${name}: ${value}`);
  if (options.body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(options.body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${options.body ?? ''}`;
}

/**
 * Sends `text` in one write on a new connection (several pipelined requests arrive in one packet),
 * waits for `count` responses and for the server to close, and drops the connection.
 */
export async function pipelined(
  port: number,
  text: string,
  count: number,
): Promise<{ responses: RawResponse[]; closedByServer: boolean; received: string }> {
  const connection = await RawConnection.open(port);
  try {
    connection.write(text);
    const responses = await connection.responses(count);
    await connection.closedWithin(10_000);
    return { responses, closedByServer: connection.closedByServer, received: connection.received };
  } finally {
    connection.destroy();
  }
}
