// A rate-limit store (rate-limit.ts) that counts in Redis while Redis answers, and in this instance's memory
// while it does not (an error, or no answer within REDIS_TIMEOUT). A Redis outage then leaves a
// per-instance limit in force instead of none, no request waits on Redis longer than the timeout, and
// the RateLimit headers are those of the counter that decided. Once Redis is marked down, requests go
// straight to memory; one PING per second checks whether it is back, and then counters are shared again.
import { createRequire } from 'node:module';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';

/** A caller's count in the current window, and the milliseconds left in it. */
export interface Count {
  current: number;
  ttl: number;
}
type Callback = (error: Error | null, result?: Count) => void;
/** @fastify/rate-limit's store contract (its Redis and local stores implement it). */
export interface Store {
  incr(key: string, callback: Callback, timeWindow: number, max: number): void;
  /** The count without changing it (the endpoint limits' failure counters, attempt-limit.ts). */
  read(key: string, callback: Callback, timeWindow: number, max: number): void;
}

// The plugin's own two stores (its package has no exports map, so these files are reachable): the same
// Lua script and the same bounded LRU it would pick by itself, rather than copies of them.
// These paths are not the package's public API: package.json pins its exact version, so an upgrade is a
// deliberate change that the tests of this file see first.
const require = createRequire(import.meta.url);
const RedisStore = require('@fastify/rate-limit/store/RedisStore') as new (
  continueExceeding?: boolean,
  exponentialBackoff?: boolean,
  redis?: Redis,
  nameSpace?: string,
) => Store;
const LocalStore = require('@fastify/rate-limit/store/LocalStore') as new (
  continueExceeding?: boolean,
  exponentialBackoff?: boolean,
  cache?: number,
) => Store;

const PROBE_INTERVAL_MS = 1000;

/** The plugin's in-memory fixed window per key (an LRU of `callers`, least recently seen forgotten first). */
export function localStore(callers?: number): Store {
  return new LocalStore(false, false, callers);
}

class FallbackStore implements Store {
  readonly #redis: Redis;
  readonly #log: FastifyBaseLogger;
  readonly #shared: Store;
  readonly #local: Store;
  #available = true;
  #probeAt = 0;
  #probing = false;

  constructor(redis: Redis, nameSpace: string, log: FastifyBaseLogger) {
    this.#redis = redis;
    this.#log = log;
    this.#shared = new RedisStore(false, false, redis, nameSpace);
    this.#local = localStore();
  }

  incr(key: string, callback: Callback, timeWindow: number, max: number): void {
    if (!this.#available) {
      this.#probe();
      this.#local.incr(key, callback, timeWindow, max);
      return;
    }
    this.#shared.incr(
      key,
      (error, result) => {
        if (!error && result) return callback(null, result);
        this.#markDown(error);
        this.#local.incr(key, callback, timeWindow, max);
      },
      timeWindow,
      max,
    );
  }

  read(key: string, callback: Callback, timeWindow: number, max: number): void {
    if (!this.#available) {
      this.#probe();
      this.#local.read(key, callback, timeWindow, max);
      return;
    }
    this.#shared.read(
      key,
      (error, result) => {
        if (!error && result) return callback(null, result);
        this.#markDown(error);
        this.#local.read(key, callback, timeWindow, max);
      },
      timeWindow,
      max,
    );
  }

  #markDown(error: Error | null): void {
    if (this.#available)
      this.#log.warn(
        { err: error },
        'Redis unavailable: rate limits are counted per instance, in memory, until it answers again',
      );
    this.#available = false;
    this.#probeAt = Date.now() + PROBE_INTERVAL_MS;
  }

  /** At most one PING in flight, at most one a second; requests never wait for it. */
  #probe(): void {
    if (this.#probing || Date.now() < this.#probeAt) return;
    this.#probing = true;
    this.#redis
      .ping()
      .then(
        () => {
          this.#available = true;
          this.#log.info('Redis answers again: rate-limit counters are shared again');
        },
        () => {
          this.#probeAt = Date.now() + PROBE_INTERVAL_MS;
        },
      )
      .finally(() => {
        this.#probing = false;
      });
  }
}

/** Counts in Redis (under `nameSpace`), in memory while Redis fails or does not answer. */
export function redisWithFallback(redis: Redis, nameSpace: string, log: FastifyBaseLogger): Store {
  return new FallbackStore(redis, nameSpace, log);
}
