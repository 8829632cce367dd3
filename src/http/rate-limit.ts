// Per-caller rate limits: a fixed window per caller, keyed by the token's caller when one was verified,
// else by client address; counters in this instance's memory, or in Redis (REDIS_URL) so every instance
// shares them, falling back to memory while Redis does not answer (rate-limit-store.ts). Responses carry
// the current draft-ietf-httpapi-ratelimit-headers fields `RateLimit` and `RateLimit-Policy`.
//
// Counted by route-guard.ts, right after authentication, in the route's own onRequest hook. Without
// Redis the count is synchronous: no promise, no callback, one Map lookup. (@fastify/rate-limit, used
// before, ran an async hook per request, looked the route up three times and wrote its three older
// draft headers for an onSend hook to rewrite; its Redis store is still the one used here.)
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { callerKeyOf } from './auth.ts';
import { Problem } from './problems.ts';
import { redisWithFallback, type Count, type Store } from './rate-limit-store.ts';

export interface RateLimitSettings {
  max: number;
  windowSeconds: number;
  redis: Redis | undefined;
}

const POLICY = 'default';
/** /metrics: a scrape every few seconds must never be refused (README, "Metrics"); probes neither. */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);
const NAMESPACE = 'signet-rl:';
/** Callers counted in memory at once; the least recently seen is forgotten first (as @fastify/rate-limit's LRU). */
const LOCAL_CALLERS = 5000;

type Done = (err?: Error) => void;

/**
 * Which routes count: all but the probes, /metrics and the authorization server's pages (they have
 * their own per-account and per-address login throttle, auth-server/login-throttle.ts), and routes
 * that say `config: { rateLimit: false }`.
 */
export function isRateLimited(url: string, config: { rateLimit?: unknown } | undefined): boolean {
  return config?.rateLimit !== false && !EXEMPT.has(url) && !url.startsWith('/oauth/');
}

/**
 * A fixed window per key, like @fastify/rate-limit's LocalStore (no continueExceeding, no backoff): the
 * first request opens a window of `windowMs`; the count resets when it has passed.
 */
export class LocalCounter {
  readonly #windows = new Map<string, { current: number; ttl: number; startedAt: number }>();
  readonly #windowMs: number;
  readonly #capacity: number;

  constructor(windowMs: number, capacity = LOCAL_CALLERS) {
    this.#windowMs = windowMs;
    this.#capacity = capacity;
  }

  /** Counts one request of `key`; the returned object is this key's (reused), valid until the next call. */
  hit(key: string, now = Date.now()): Count {
    const windows = this.#windows;
    let entry = windows.get(key);
    if (entry === undefined) {
      if (windows.size >= this.#capacity) windows.delete(windows.keys().next().value!);
      entry = { current: 1, ttl: this.#windowMs, startedAt: now };
    } else {
      windows.delete(key); // re-inserted below: Map order is then least recently seen first
      if (entry.startedAt + this.#windowMs <= now) {
        entry.current = 1;
        entry.ttl = this.#windowMs;
        entry.startedAt = now;
      } else {
        entry.current++;
        entry.ttl = this.#windowMs - (now - entry.startedAt);
      }
    }
    windows.set(key, entry);
    return entry;
  }
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
  const local = new LocalCounter(windowMs);
  return { count: (request, reply, done) => decide(reply, local.hit(callerKeyOf(request)), done) };
}
