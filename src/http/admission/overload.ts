// Load shedding while the event loop lags: requests get 503 problem+json with Retry-After (RFC 9110
// §15.6.4) instead of queueing behind work the process cannot keep up with.
//
// Written here rather than taken from @fastify/under-pressure: its sampler calls process.memoryUsage()
// on every tick whatever is configured, and that opens /proc/self/stat, so when descriptors run out
// (EMFILE) it throws from a timer and ends the process. Only the event-loop delay is needed, and
// perf_hooks measures it without a descriptor.
//
// The guard answers *sustained* overload, never a single stall. One long synchronous step (start-up,
// the provider rebuild after a key rotation, a large JSON body) delays the loop once; while it runs no
// timer fires, so the whole stall lands in one sample window. Shedding for that would turn away the
// requests that follow it, although the loop is free again. Only when SUSTAINED_WINDOWS windows in a
// row each lag past the limit is the process shedding load. Measuring starts when the app is ready
// (after migrations and the provider build), so start-up work is never counted.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Problem } from '../problems/problems.ts';

/** Histogram resolution, subtracted from the mean as its own sampling delay. */
const RESOLUTION_MS = 10;
const WINDOW_MS = 500;
/** Consecutive lagging windows that make overload: 1.5 s of it, three times any one stall's share. */
export const SUSTAINED_WINDOWS = 3;
const RETRY_AFTER_SECONDS = '10';
/**
 * Liveness is exempt: an orchestrator that restarts a process because it is busy adds a cold start to
 * the overload. Readiness is not: /readyz answers 503 while the API sheds, so the two always agree.
 */
const EXEMPT_ROUTES = new Set(['/healthz']);

/** Mean event-loop delay per window; `overloaded` once SUSTAINED_WINDOWS in a row exceed the limit. */
export class LoopLag {
  #lagging = 0;
  #lastDelayMs = 0;
  readonly #limitMs: number;

  constructor(limitMs: number) {
    this.#limitMs = limitMs;
  }

  /** Feeds one window's mean delay in ms. */
  record(delayMs: number): void {
    this.#lastDelayMs = delayMs;
    this.#lagging = delayMs > this.#limitMs ? this.#lagging + 1 : 0;
  }

  get overloaded(): boolean {
    return this.#lagging >= SUSTAINED_WINDOWS;
  }

  get delayMs(): number {
    return this.#lastDelayMs;
  }
}

function windowMean(histogram: ReturnType<typeof monitorEventLoopDelay>): number {
  const mean = histogram.mean / 1e6 - RESOLUTION_MS;
  return Number.isNaN(mean) ? 0 : Math.max(0, mean);
}

function isExempt(request: FastifyRequest): boolean {
  return EXEMPT_ROUTES.has(request.routeOptions.url ?? '');
}

/**
 * Starts the sampler and returns the admission step for the shared onRequest hook (request-pipeline.ts):
 * a 503 while overloaded, nothing otherwise (one property read per request). Undefined when turned off.
 */
export function overloadGuard(
  app: FastifyInstance,
  maxEventLoopDelayMs: number,
): ((request: FastifyRequest) => Problem | undefined) | undefined {
  if (maxEventLoopDelayMs === 0) return undefined;
  const lag = new LoopLag(maxEventLoopDelayMs);
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  let sampler: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    histogram.enable();
    sampler = setInterval(() => {
      lag.record(windowMean(histogram));
      histogram.reset();
      // At trace level only: lets a test see the sampler run (test/http/connections.test.ts).
      app.log.trace({ eventLoopDelayMs: Math.round(lag.delayMs) }, 'event loop delay sampled');
    }, WINDOW_MS).unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(sampler);
    histogram.disable();
  });
  return (request) => {
    if (!lag.overloaded || isExempt(request)) return undefined;
    const detail = `the service is overloaded (event loop delayed ${Math.round(lag.delayMs)} ms); retry later`;
    return new Problem('unavailable', detail, { headers: { 'retry-after': RETRY_AFTER_SECONDS } });
  };
}
