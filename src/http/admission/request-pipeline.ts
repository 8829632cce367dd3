// The cross-cutting work every request goes through, folded into one hook per lifecycle stage. Fastify
// runs each hook through its hook runner (a bound call, a `next` continuation, an error check), so
// nine onRequest hooks, three onSend and two onResponse hooks cost several microseconds per request
// before any route runs (docs/benchmarks-history.md, "Two costs every API request paid"). Each concern stays in its own
// module as a plain function (a "step"); this module only decides the order, once:
//
//   onRequest   request id → draining (503) → Host / Authorization lines (400) → security headers
//               → overload (503)
//               [CORS, the authorization server's middleware, then per route: auth + rate limit
//                (route-guard.ts)]
//   preParsing  deferred token verification + scope check (auth.ts, registered by route-guard.ts)
//   onSend      Connection: close while draining → close after an early response (early-response.ts)
//   onResponse  request-duration metric → in-flight bookkeeping
//
// An admission step returns the Problem to answer with (the later steps then do not run, as a hook that
// answers stops the ones after it), or undefined to go on.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { closeIfBodyUnread } from './early-response.ts';
import { sendProblem } from '../problems/errors.ts';
import type { Problem } from '../problems/problems.ts';
import type { Drain } from '../ops/shutdown.ts';

export type AdmissionStep = (request: FastifyRequest, reply: FastifyReply) => Problem | undefined | void;
type ResponseStep = (request: FastifyRequest, reply: FastifyReply) => void;

/** One onRequest hook running `steps` in order; the first Problem is the answer. */
export function registerAdmission(app: FastifyInstance, steps: AdmissionStep[]): void {
  if (steps.length === 0) return;
  const count = steps.length;
  app.addHook('onRequest', (request, reply, done) => {
    for (let i = 0; i < count; i++) {
      const problem = steps[i]!(request, reply);
      if (problem) return void sendProblem(request, reply, problem);
    }
    done();
  });
}

/**
 * The onSend, onResponse and onRequestAbort hooks: `Connection: close` while draining, the lingering
 * close after an early response, the request-duration metric (when metrics are on), and the end of the
 * request's in-flight record.
 */
export function registerResponseHooks(app: FastifyInstance, drain: Drain, observe: ResponseStep | undefined): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    if (drain.closing) reply.header('connection', 'close');
    closeIfBodyUnread(request, reply, payload, done);
  });
  app.addHook('onResponse', (request, reply, done) => {
    observe?.(request, reply);
    drain.finished(request);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    drain.finished(request);
    done();
  });
}
