// Per route, decided once when the route is registered: who is calling (bearer token, auth.ts) and
// whether the caller is over its rate limit (rate-limit.ts), in one onRequest hook of the route's own.
// The route's scope and whether it is rate limited are read here once, not looked up on every request;
// a cached token and an in-memory count cost no promise at all.
//
// Route hooks run after the app's onRequest hooks (request id, draining, Host, security headers,
// overload, CORS, the authorization server's middleware): the order @fastify/rate-limit had. Routes
// registered before this hook (the authorization server's own) are neither authenticated here nor
// counted; a scoped one would still be refused by the scope check (auth.ts), which runs for every route.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { authenticateAtHand, authenticateNow } from './auth.ts';
import { isRateLimited, type RateLimiter } from '../rate-limit/rate-limit.ts';
import type { TokenVerifier } from './token-verifier.ts';

type Done = (err?: Error) => void;
type Guard = (request: FastifyRequest, reply: FastifyReply, done: Done) => void;

export function registerRouteGuard(app: FastifyInstance, verifier: TokenVerifier, limiter: RateLimiter): void {
  app.addHook('onRoute', (route) => {
    const guard = guardFor(route, verifier, limiter);
    // A new array, never a push: Fastify copies a GET route's options for its HEAD route before the
    // onRoute hooks run, and that copy gets a guard of its own.
    if (guard) route.onRequest = [...hooksOf(route.onRequest), guard as OnRequest];
  });
}

type OnRequest = Extract<RouteOptions['onRequest'], unknown[]>[number];

function hooksOf(hooks: RouteOptions['onRequest']): OnRequest[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks as OnRequest];
}

function guardFor(route: RouteOptions, verifier: TokenVerifier, limiter: RateLimiter): Guard | undefined {
  const config = route.config as { scope?: string; rateLimit?: unknown } | undefined;
  const scoped = Boolean(config?.scope);
  const limited = isRateLimited(route.url, config);
  if (!scoped) return limited ? limiter.count : undefined;
  if (!limited)
    return (request, _reply, done) => {
      const token = authenticateNow(request, verifier);
      if (token === null) return done();
      authenticateAtHand(request, verifier, token).then(() => done(), done);
    };
  return (request, reply, done) => {
    const token = authenticateNow(request, verifier);
    if (token === null) return limiter.count(request, reply, done);
    authenticateAtHand(request, verifier, token).then(() => limiter.count(request, reply, done), done);
  };
}
