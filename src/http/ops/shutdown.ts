// Graceful shutdown as the client sees it. Once draining starts (SIGTERM, then close()), every request
// that still arrives gets a 503 problem with Retry-After (RFC 9110 §15.6.4), /readyz included so load
// balancers stop routing here, and every response asks the client to drop the connection (RFC 9112
// §9.6), so close() need not wait for keep-alive timeouts and the retry opens a connection to a live
// instance. The requests still running are tracked so that a forced exit can say which ones it cut.
//
// The per-request parts are steps of the shared hooks (request-pipeline.ts), not hooks of their own.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Problem } from '../problems/problems.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** From now on new requests get 503 shutting-down; the listener stays open until close(). */
    startDraining(): void;
    /** Requests accepted before draining started that have not finished yet, with when each started (epoch ms). */
    requestsInFlight(): Map<FastifyRequest, number>;
  }
}

/** Another instance, or this one restarted, is expected to answer about this soon. */
const RETRY_AFTER_SECONDS = '1';

export interface Drain {
  /** True once draining started: responses carry `Connection: close`. */
  readonly closing: boolean;
  /** The first step of every request (before auth, rate limits, the authorization server): a refusal while draining. */
  admit(request: FastifyRequest): Problem | undefined;
  /** The request was answered or aborted. */
  finished(request: FastifyRequest): void;
}

export function createDrain(app: FastifyInstance): Drain {
  let closing = false;
  const inFlight = new Map<FastifyRequest, number>();
  app.decorate('startDraining', () => void (closing = true));
  app.decorate('requestsInFlight', () => new Map(inFlight));
  // preClose runs before the server stops listening and before any plugin releases its resources.
  app.addHook('preClose', async () => {
    closing = true;
  });
  return {
    get closing() {
      return closing;
    },
    admit(request) {
      if (!closing) {
        inFlight.set(request, Date.now());
        return undefined;
      }
      return new Problem('shuttingDown', 'this instance is shutting down; retry on a new connection', {
        headers: { 'retry-after': RETRY_AFTER_SECONDS },
      });
    },
    finished(request) {
      inFlight.delete(request);
    },
  };
}

/** What the log says of each request a forced exit cuts: enough to find it, nothing a client sent in secret. */
export function describeCutRequests(
  requests: Map<FastifyRequest, number>,
  now = Date.now(),
): Array<Record<string, unknown>> {
  return [...requests].map(([request, startedAt]) => ({
    reqId: request.id,
    method: request.method,
    path: request.url.split('?')[0],
    runningMs: now - startedAt,
  }));
}
