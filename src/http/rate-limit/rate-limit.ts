// Per-caller rate limits: a fixed window per caller, keyed by the token's caller when one was verified,
// else by client address; counters in this instance's memory, or in Redis (REDIS_URL) so every instance
// shares them, falling back to memory while Redis does not answer (rate-limit-store.ts). Responses carry
// the current draft-ietf-httpapi-ratelimit-headers fields `RateLimit` and `RateLimit-Policy`.
//
// Counted by route-guard.ts, right after authentication, in the route's own onRequest hook. Without
// Redis the count is synchronous (the plugin's LocalStore calls back at once). (@fastify/rate-limit's
// hook, used before, ran async per request, looked the route up three times and wrote its three older
// draft headers for an onSend hook to rewrite; its two stores are still the ones used here.)
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { callerKeyOf } from '../bearer/auth.ts';
import { Problem } from '../problems/problems.ts';
import { localStore, redisWithFallback, type Count, type Store } from './rate-limit-store.ts';

interface RateLimitSettings {
  max: number;
  windowSeconds: number;
  redis: Redis | undefined;
}

const POLICY = 'default';
/** /metrics: a scrape every few seconds must never be refused (docs/reference/metrics.md); probes neither. */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);
const NAMESPACE = 'signet-rl:';

type Done = (err?: Error) => void;

/**
 * Which routes count: all but the probes, /metrics and the authorization server's pages (they have
 * their own per-account and per-address login throttle, auth-server/identity/login-throttle.ts), and routes
 * that say `config: { rateLimit: false }`.
 */
export function isRateLimited(url: string, config: { rateLimit?: unknown } | undefined): boolean {
  return config?.rateLimit !== false && !EXEMPT.has(url) && !url.startsWith('/oauth/');
}

export interface RateLimiter {
  /** Counts the request against its caller; sets the RateLimit fields; calls `done` (with a 429 Problem when over). */
  count(request: FastifyRequest, reply: FastifyReply, done: Done): void;
}

export function createRateLimiter(
  settings: RateLimitSettings,
  log: FastifyBaseLogger,
  onRefusal: () => void,
): RateLimiter {
  const { max, windowSeconds } = settings;
  const windowMs = windowSeconds * 1000;
  const policy = `"${POLICY}";q=${max};w=${windowSeconds}`;
  const decide = (reply: FastifyReply, count: Count, done: Done): void => {
    const reset = Math.ceil(count.ttl / 1000);
    reply.header('ratelimit-policy', policy);
    if (count.current <= max) {
      reply.header('ratelimit', `"${POLICY}";r=${max - count.current};t=${reset}`);
      return done();
    }
    reply.header('ratelimit', `"${POLICY}";r=0;t=${reset}`);
    reply.header('retry-after', String(reset));
    onRefusal();
    done(new Problem('rateLimited', `limit of ${max} requests per ${windowSeconds} s reached; retry in ${reset} s`));
  };
  if (settings.redis) {
    // Never a `skipOnError`: it would let every request through while the headers claim a full quota.
    const store: Store = redisWithFallback(settings.redis, NAMESPACE, log);
    return {
      count: (request, reply, done) =>
        store.incr(
          callerKeyOf(request),
          (err, result) =>
            err || !result ? done(err ?? new Error('no rate-limit count')) : decide(reply, result, done),
          windowMs,
          max,
        ),
    };
  }
  // The plugin's LocalStore answers synchronously: no promise, one LRU lookup.
  const local = localStore();
  const counted = (reply: FastifyReply, done: Done) => (_err: Error | null, count?: Count) =>
    decide(reply, count!, done);
  return { count: (request, reply, done) => local.incr(callerKeyOf(request), counted(reply, done), windowMs, max) };
}
