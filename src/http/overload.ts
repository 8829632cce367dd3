// Load shedding while the event loop lags: requests get 503 problem+json with Retry-After (RFC 9110
// §15.6.4) instead of queueing behind work the process cannot keep up with.
//
// Written here rather than taken from @fastify/under-pressure: its sampler calls process.memoryUsage()
// on every tick whatever is configured, and that opens /proc/self/stat, so when descriptors run out
// (EMFILE) it throws from a timer and ends the process. Only the event-loop delay is needed, and
// perf_hooks measures it without a descriptor.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { sendProblem } from './errors.ts';
import { Problem } from './problems.ts';

/** Histogram resolution, subtracted from the mean as its own sampling delay. */
const RESOLUTION_MS = 10;
const SAMPLE_INTERVAL_MS = 1000;
const RETRY_AFTER_SECONDS = '10';

export function registerOverloadGuard(app: FastifyInstance, maxEventLoopDelayMs: number): void {
  if (maxEventLoopDelayMs === 0) return;
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let delayMs = 0;
  const sampler = setInterval(() => {
    const mean = histogram.mean / 1e6 - RESOLUTION_MS;
    delayMs = Number.isNaN(mean) ? 0 : Math.max(0, mean);
    histogram.reset();
  }, SAMPLE_INTERVAL_MS).unref();
  app.addHook('onRequest', (request, reply, done) => {
    if (delayMs <= maxEventLoopDelayMs) return done();
    const detail = `the service is overloaded (event loop delayed ${Math.round(delayMs)} ms); retry later`;
    sendProblem(
      request,
      reply,
      new Problem('unavailable', detail, { headers: { 'retry-after': RETRY_AFTER_SECONDS } }),
    );
  });
  app.addHook('onClose', async () => {
    clearInterval(sampler);
    histogram.disable();
  });
}
