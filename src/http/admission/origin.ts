// Who is calling and under which public URL: client address, protocol and host after trusted proxies
// (RFC 7239 Forwarded and X-Forwarded-*), and the request id (X-Request-Id only from trusted peers).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { compileTrust, nodeAddress, resolveClientOrigin, type ClientOrigin, type TrustFn } from './forwarded.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Resolved once, on first use. */
    readonly clientOrigin: ClientOrigin;
    originCache: ClientOrigin | undefined;
  }
  interface FastifyInstance {
    publicUrlSetting: string | undefined;
    fallbackHost: string;
    /** Resolves a raw request's origin; for requests built outside the routing (frameworkErrors), which lack `clientOrigin`. */
    originOf: (raw: IncomingMessage) => ClientOrigin;
    /** True when the connection's peer is a trusted proxy (TRUST_PROXY). */
    fromTrustedProxy: (raw: IncomingMessage) => boolean;
  }
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export function requestIdGenerator(trust: TrustFn): (req: IncomingMessage) => string {
  return (req) => {
    const header = req.headers['x-request-id'];
    const fromTrustedPeer =
      typeof header === 'string' && REQUEST_ID.test(header) && trust(req.socket.remoteAddress ?? '', 0);
    return fromTrustedPeer ? header : randomUUID();
  };
}

export function registerOrigin(
  app: FastifyInstance,
  options: { trustProxy: false | number | string[]; publicUrl: string | undefined; fallbackHost: string },
): TrustFn {
  const trust = compileTrust(options.trustProxy);
  const resolve = (raw: IncomingMessage) =>
    resolveClientOrigin(
      {
        remoteAddress: raw.socket.remoteAddress ?? '',
        encrypted: Boolean((raw.socket as TLSSocket).encrypted),
        headers: raw.headers,
      },
      trust,
    );
  const originOf = connectionMemo(resolve, (raw) => {
    // The peer exactly as resolveClientOrigin judges it (IPv4-mapped addresses reduced).
    const address = raw.socket.remoteAddress ?? '';
    return trust(nodeAddress(address) ?? address, 0);
  });
  app.decorate('publicUrlSetting', options.publicUrl);
  app.decorate('fallbackHost', options.fallbackHost);
  app.decorate('originOf', originOf);
  app.decorate('fromTrustedProxy', (raw: IncomingMessage) => trust(raw.socket.remoteAddress ?? '', 0));
  app.decorateRequest('originCache', undefined);
  app.decorateRequest('clientOrigin', {
    getter(this: FastifyRequest) {
      this.originCache ??= originOf(this.raw);
      return this.originCache;
    },
  });
  return trust;
}

/** The first step of the shared onRequest hook (request-pipeline.ts): every response carries its request id. */
export function requestIdHeader(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
}

/**
 * A client that is not a trusted proxy has the same origin on every request of its connection as long
 * as it sends the same Host: the address and TLS are the socket's, and forwarded headers from it are
 * ignored (forwarded.ts). That origin is kept per connection, so a keep-alive client's requests skip
 * the parsing and validation. A trusted proxy's requests are resolved one by one: each carries the
 * forwarded headers of another client.
 */
function connectionMemo(
  resolve: (raw: IncomingMessage) => ClientOrigin,
  fromTrustedPeer: (raw: IncomingMessage) => boolean,
): (raw: IncomingMessage) => ClientOrigin {
  const memo = new WeakMap<object, { host: string | undefined; origin: ClientOrigin }>();
  return (raw) => {
    const socket = raw.socket as object | null;
    if (!socket) return resolve(raw);
    const host = raw.headers.host;
    const known = memo.get(socket);
    if (known !== undefined && known.host === host) return known.origin;
    const origin = resolve(raw);
    if (!fromTrustedPeer(raw)) memo.set(socket, { host, origin: Object.freeze(origin) });
    return origin;
  };
}

/** The externally visible base URL: PUBLIC_URL when configured, else what the (trusted) request says. */
export function publicBaseUrl(request: FastifyRequest): string {
  const configured = request.server.publicUrlSetting;
  if (configured) return configured;
  // Fastify builds the request of a frameworkErrors call from its base class, without our decorations.
  const origin = (request.clientOrigin as ClientOrigin | undefined) ?? request.server.originOf(request.raw);
  return `${origin.protocol}://${origin.host ?? request.server.fallbackHost}`;
}

/**
 * The base of links Signet signs into what it sends to third parties (webhook event `Data`): PUBLIC_URL,
 * else the public URL a trusted proxy forwarded, else the address the request reached this server at.
 * Never a Host header an API caller chose: a caller with write access could otherwise have every
 * subscriber receive, signed by us, links to a host of its own, and a consumer that follows them with
 * its token would send the token there.
 */
export function signedLinkBaseUrl(request: FastifyRequest): string {
  if (request.server.publicUrlSetting || request.server.fromTrustedProxy(request.raw)) return publicBaseUrl(request);
  const { localAddress = '127.0.0.1', localPort } = request.raw.socket;
  const address = localAddress.startsWith('::ffff:') ? localAddress.slice(7) : localAddress;
  return `http://${address.includes(':') ? `[${address}]` : address}:${localPort}`;
}
