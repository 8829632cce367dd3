// oidc-provider under the issuer's path (at the root it would swallow every other route), through
// @fastify/middie's engine: its URL normalisation and matching (percent-decoding, a case-insensitive
// prefix, absolute-form targets), the same ones oidc-provider's own router applies. The plugin would
// also run that engine for every request of every route, after copying Fastify's request getters
// (ip, ips, hostname, protocol) onto the raw request; here one onRequest hook runs it only for a URL
// that could match the mount (mayReachMount), so an API request skips both (a GET's CPU fell
// 149 → 115 µs with direct-read.ts: docs/benchmarks-history.md, "Two costs every API request paid").
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyRequest } from 'fastify';

type Next = (err?: Error) => void;
type Middleware = (req: IncomingMessage, res: ServerResponse, next: Next) => void;
interface MiddieEngine {
  use(path: string, middleware: Middleware): void;
  run(req: IncomingMessage, res: ServerResponse, done: Next): void;
}
type EngineFactory = (complete: (err: Error | null, req: unknown, res: unknown, done: Next) => void) => MiddieEngine;

// The package has no exports map, so its engine is reachable; the plugin's own options are all
// Fastify's router normalisations (ignoreDuplicateSlashes …), none of which Signet turns on.
// These paths are not the package's public API: package.json pins its exact version, so an upgrade is a
// deliberate change that the tests of this file see first.
const require = createRequire(import.meta.url);
const createEngine = require('@fastify/middie/lib/engine') as EngineFactory;

const FASTIFY_REQUEST = Symbol('signet fastify request');
type MountedRequest = IncomingMessage & { id?: string; [FASTIFY_REQUEST]?: FastifyRequest };

/**
 * Whether middie's engine could match `url` to `mount` (lower case): true for every URL it matches,
 * false for the plain paths of the API. The engine matches the percent-decoded path (so any `%` may
 * spell the mount), case-insensitively, and reduces an absolute-form target to its path; a target that
 * does not start with "/" or holds a "%" is always handed to it.
 */
export function mayReachMount(url: string, mount: string): boolean {
  if (url.charCodeAt(0) !== 0x2f || url.includes('%')) return true;
  return url.length >= mount.length && url.slice(0, mount.length).toLowerCase() === mount;
}

/**
 * Runs `middleware` for every request whose path is `mount` or below it, however spelled. It gets the
 * path below the mount as `req.url` (and `req.originalUrl`), the request id as `req.id`, and the
 * Fastify request through `fastifyRequestOf`.
 */
export function mountMiddleware(app: FastifyInstance, mount: string, middleware: Middleware): void {
  const engine = createEngine((err, _req, _res, done) => done(err ?? undefined));
  engine.use(mount, middleware);
  const lowerMount = mount.toLowerCase();
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw as MountedRequest;
    if (!mayReachMount(raw.url ?? '/', lowerMount)) return done();
    raw.id = request.id;
    raw[FASTIFY_REQUEST] = request;
    engine.run(raw, reply.raw, done);
  });
}

/** The Fastify request a mounted middleware's `req` belongs to. */
export function fastifyRequestOf(req: IncomingMessage): FastifyRequest | undefined {
  return (req as MountedRequest)[FASTIFY_REQUEST];
}
