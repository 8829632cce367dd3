// Limits for endpoints that authenticate their caller (the authorization server's /token, /introspect and
// /reg: docs/security.md, "Rate limits"), where a wrong secret must cost more than a right one. Each
// caller key (an address, a client) has two fixed-window counters in the same stores as rate-limit.ts
// (Redis shared by every instance, memory while Redis does not answer): every request counts against
// `max`, every failed one also against `failures`, which is much lower. A key past either limit is
// refused (429) until its window ends.
//
// Failures are counted once answered: requests already in flight when the failure limit is reached still
// get their answer, so a burst sent in parallel can pass it by at most its own width — and never the
// request limit, which is counted on arrival.
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { localStore, redisWithFallback, type Count, type Store } from './rate-limit-store.ts';

export interface AttemptLimitSettings {
  /** Requests per window and key. */
  max: number;
  /** Failed requests per window and key. */
  failures: number;
  windowMs: number;
  redis: Redis | undefined;
}

export type AttemptVerdict =
  { allowed: true } | { allowed: false; limit: 'requests' | 'failures'; quota: number; retryAfterSeconds: number };

export interface AttemptLimiter {
  readonly settings: Readonly<Omit<AttemptLimitSettings, 'redis'>>;
  /** Counts a request of these keys; refused when one of them is past either limit. */
  admit(keys: readonly string[]): Promise<AttemptVerdict>;
  /** Counts a failed request against these keys. */
  fail(keys: readonly string[]): Promise<void>;
}

const NAMESPACE = 'signet-attempts:';

export function createAttemptLimiter(
  settings: AttemptLimitSettings,
  log: FastifyBaseLogger,
  onRefusal: () => void,
): AttemptLimiter {
  const { max, failures, windowMs } = settings;
  const store: Store = settings.redis ? redisWithFallback(settings.redis, NAMESPACE, log) : localStore();
  const call = (method: 'incr' | 'read', key: string, limit: number) =>
    new Promise<Count>((resolve, reject) =>
      store[method](
        key,
        (err, count) => (err || !count ? reject(err ?? new Error('no count')) : resolve(count)),
        windowMs,
        limit,
      ),
    );
  const refused = (limit: 'requests' | 'failures', count: Count): AttemptVerdict => {
    onRefusal();
    return {
      allowed: false,
      limit,
      quota: limit === 'requests' ? max : failures,
      retryAfterSeconds: Math.max(1, Math.ceil(count.ttl / 1000)),
    };
  };
  return {
    settings: { max, failures, windowMs },
    async admit(keys) {
      const failed = await Promise.all(keys.map((key) => call('read', `f:${key}`, failures)));
      const over = failed.find((count) => count.current >= failures);
      if (over) return refused('failures', over);
      const counted = await Promise.all(keys.map((key) => call('incr', `r:${key}`, max)));
      const busy = counted.find((count) => count.current > max);
      return busy ? refused('requests', busy) : { allowed: true };
    },
    async fail(keys) {
      await Promise.all(keys.map((key) => call('incr', `f:${key}`, failures)));
    },
  };
}
