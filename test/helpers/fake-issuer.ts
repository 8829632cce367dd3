// A token issuer's metadata and JWKS on a real HTTP server (127.0.0.1, a free port) that a test controls:
// up, down (503 to everything) or hanging (requests accepted and never answered); it counts every
// request it receives, so a test can bound the outbound fetches a resource server makes.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { JWK } from 'jose';
import { withDeadline } from './deadline.ts';

export type IssuerMode = 'up' | 'down' | 'hang';

export class FakeIssuer {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #keys: JWK[];
  mode: IssuerMode = 'up';
  /** Every request received, in order (`GET /issuer/jwks` …). */
  readonly requests: string[] = [];
  origin = '';

  private constructor(keys: JWK[]) {
    this.#keys = keys;
    this.#server = createServer((request, response) => {
      this.requests.push(`${request.method} ${request.url}`);
      if (this.mode === 'hang') return;
      if (this.mode === 'down') return void response.writeHead(503, { 'retry-after': '60' }).end('down');
      const body = this.#document(request.url ?? '');
      if (body === undefined) return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(keys: JWK[]): Promise<FakeIssuer> {
    const issuer = new FakeIssuer(keys);
    issuer.#server.listen(0, '127.0.0.1');
    await withDeadline(once(issuer.#server, 'listening'), 10_000, 'the fake issuer listening on 127.0.0.1');
    issuer.origin = `http://127.0.0.1:${(issuer.#server.address() as { port: number }).port}`;
    return issuer;
  }

  /** The issuer identifier (`iss`), with a path like most real issuers. */
  get url(): string {
    return `${this.origin}/issuer`;
  }

  get jwksUrl(): string {
    return `${this.url}/jwks`;
  }

  get fetches(): number {
    return this.requests.length;
  }

  /** `40 requests: 20× GET /a, 20× GET /b`, for assertion messages. */
  summary(): string {
    const counts = new Map<string, number>();
    for (const request of this.requests) counts.set(request, (counts.get(request) ?? 0) + 1);
    return `${this.fetches} requests: ${[...counts].map(([request, n]) => `${n}× ${request}`).join(', ') || 'none'}`;
  }

  async close(): Promise<void> {
    const closed = new Promise((resolve) => this.#server.close(resolve));
    for (const socket of this.#sockets) socket.destroy();
    await withDeadline(closed, 10_000, () => `closing the fake issuer: ${this.#sockets.size} connections still open`);
  }

  #document(path: string): object | undefined {
    if (path === '/issuer/.well-known/openid-configuration') return { issuer: this.url, jwks_uri: this.jwksUrl };
    if (path === '/issuer/jwks') return { keys: this.#keys };
    return undefined;
  }
}
