// Graceful shutdown as the client sees it. Once close() starts, a request that still arrives (on a
// keep-alive connection that was busy when the server stopped listening, or pipelined behind one)
// gets a 503 problem with Retry-After (RFC 9110 §15.6.4) instead of Fastify's built-in JSON 503,
// and every response asks the client to drop the connection (RFC 9112 §9.6), so close() need not
// wait for keep-alive timeouts and the retry opens a connection to a live instance.
import type { FastifyInstance } from 'fastify';
import { sendProblem } from './errors.ts';
import { Problem } from './problems.ts';

/** Another instance, or this one restarted, is expected to answer about this soon. */
const RETRY_AFTER_SECONDS = '1';

/** Register before the other onRequest hooks (auth, rate limits, the authorization server): nothing else runs for a refused request. */
export function registerShutdownResponses(app: FastifyInstance): void {
  let closing = false;
  // preClose runs before the server stops listening and before any plugin releases its resources.
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (!closing) return done();
    sendProblem(request, reply, new Problem('shuttingDown', 'this instance is shutting down; retry on a new connection', { headers: { 'retry-after': RETRY_AFTER_SECONDS } }));
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
