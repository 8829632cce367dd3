// A TCP proxy in front of a real dependency (PostgreSQL, Redis, an issuer) that a test controls, to
// reproduce network faults for real: a stall (bytes stop flowing both ways, sockets stay open), a
// reset (every open connection gets a TCP RST), a cut (new connections refused, open ones dropped).
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { withDeadline } from './deadline.ts';

interface Pair {
  client: Socket;
  upstream: Socket;
}

export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #pairs = new Set<Pair>();
  #server: Server | undefined;
  #stalled = false;
  /** The proxy's own port on 127.0.0.1; kept across cut() and start() so clients reconnect to it. */
  port = 0;
  /** Connections accepted since start (a test can check that a pool reconnected). */
  accepted = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  /** A proxy for the host and port of a URL such as postgres://…@127.0.0.1:5432/db or redis://127.0.0.1:6379. */
  static for(url: string, defaultPort: number): TcpProxy {
    const parsed = new URL(url);
    return new TcpProxy({ host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || defaultPort) });
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.toString();
  }

  get openConnections(): number {
    return this.#pairs.size;
  }

  async start(): Promise<void> {
    this.#server = createServer((client) => this.#relay(client));
    this.#server.listen(this.port, '127.0.0.1');
    await withDeadline(once(this.#server, 'listening'), 10_000, `the proxy listening on 127.0.0.1:${this.port}`);
    this.port = (this.#server.address() as { port: number }).port;
  }

  /** Bytes stop flowing in both directions; connections stay open and new ones are accepted but silent. */
  stall(): void {
    this.#stalled = true;
    for (const { client, upstream } of this.#pairs) {
      client.pause();
      upstream.pause();
    }
  }

  resume(): void {
    this.#stalled = false;
    for (const { client, upstream } of this.#pairs) {
      client.resume();
      upstream.resume();
    }
  }

  /** Every open connection is reset (RST on both sides), as a firewall or a crashed host would; new ones are still accepted. */
  reset(): void {
    for (const { client, upstream } of this.#pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
  }

  /** New connections are refused (ECONNREFUSED) and open ones are dropped. */
  async cut(): Promise<void> {
    if (!this.#server?.listening) return;
    const closed = new Promise((resolve) => this.#server!.close(resolve));
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    await withDeadline(closed, 10_000, () => `closing the proxy: ${this.#pairs.size} connections still open`);
  }

  async close(): Promise<void> {
    this.#stalled = false;
    await this.cut();
  }

  #relay(client: Socket): void {
    this.accepted++;
    const upstream = connect(this.#target.port, this.#target.host);
    const pair: Pair = { client, upstream };
    this.#pairs.add(pair);
    const end = (): void => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', () => undefined); // a reset or refused upstream just ends the pair
      socket.on('close', end);
    }
    // Forwarded by hand rather than with pipe(): pipe() resumes a source on 'drain', which would end a stall.
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    if (this.#stalled) {
      client.pause();
      upstream.pause();
    }
  }
}
