// Per-caller rate limits with @fastify/rate-limit: keyed by the token's caller when one was verified,
// else by client address; counters in memory, or in Redis (REDIS_URL) so every instance shares them,
// falling back to this instance's memory while Redis does not answer (rate-limit-store.ts).
// The plugin emits the older draft's three headers; an onSend hook rewrites them into the current
// draft-ietf-httpapi-ratelimit-headers fields `RateLimit` and `RateLimit-Policy`.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import { Problem } from './problems.ts';
import { redisWithFallback } from './rate-limit-store.ts';

export interface RateLimitSettings {
  max: number;
  windowSeconds: number;
  redis: Redis | undefined;
}

const POLICY = 'default';
// /metrics: a scrape every few seconds must never be refused (README, "Metrics").
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);
const NAMESPACE = 'signet-rl:';

export async function registerRateLimit(app: FastifyInstance, settings: RateLimitSettings): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: settings.max,
    timeWindow: settings.windowSeconds * 1000,
    // Never the plugin's `skipOnError`: it lets every request through while the headers claim a full quota.
    ...(settings.redis && { store: redisWithFallback(settings.redis, NAMESPACE, app.log) }),
    enableDraftSpec: true,
    // The route, so `/healthz?probe=1` is exempt too. The authorization server's pages have their own
    // per-account and per-address login throttle (auth-server/login-throttle.ts).
    allowList: (request) =>
      EXEMPT.has(request.routeOptions.url ?? '') || (request.routeOptions.url ?? '').startsWith('/oauth/'),
    keyGenerator: (request) => (request.principal ? request.principal.callerKey : `ip:${request.clientOrigin.ip}`),
    errorResponseBuilder: (request, context) => {
      request.server.metrics.rateLimitRefusals.inc();
      return new Problem(
        'rateLimited',
        `limit of ${context.max} requests per ${settings.windowSeconds} s reached; retry in ${context.after}`,
      );
    },
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    rewriteHeaders(reply, settings.windowSeconds);
    done(null, payload);
  });
}

function rewriteHeaders(reply: FastifyReply, windowSeconds: number): void {
  const limit = reply.getHeader('ratelimit-limit');
  if (limit === undefined) return;
  const remaining = reply.getHeader('ratelimit-remaining') ?? 0;
  const reset = reply.getHeader('ratelimit-reset') ?? windowSeconds;
  reply.removeHeader('ratelimit-limit');
  reply.removeHeader('ratelimit-remaining');
  reply.removeHeader('ratelimit-reset');
  reply.header('ratelimit-policy', `"${POLICY}";q=${limit};w=${windowSeconds}`);
  reply.header('ratelimit', `"${POLICY}";r=${remaining};t=${reset}`);
}
