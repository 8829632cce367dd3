// Fastify adapter: POST /webhooks/:source with the body kept as the exact bytes received. Fastify's
// JSON parser is removed in this plugin's scope, because verifying re-serialized JSON is the classic
// webhook bug (docs/guides/producing-webhooks.md, "What a delivery looks like": the HMAC is over the exact body bytes).
// Not wrapped in fastify-plugin on purpose: the parser and error handler stay inside this scope.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  acceptDelivery,
  acceptedBody,
  DEFAULT_MAX_BODY_BYTES,
  distinctHeaders,
  type IntakeOptions,
  type IntakeResult,
} from './intake.ts';
import { problem, PROBLEM_CONTENT_TYPE, type Problem } from './problems.ts';
import type { InboxWorker } from './worker.ts';

export type ReceiverPluginOptions = IntakeOptions & { worker?: InboxWorker };

function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  return reply.code(p.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(p));
}

function sendResult(reply: FastifyReply, result: IntakeResult): FastifyReply {
  if (result.problem) return sendProblem(reply, result.problem);
  return reply.code(200).send(acceptedBody(result));
}

/** Framework errors (body too large, unreadable body) and faults, as problem+json; 5xx hide details. */
function problemFor(error: FastifyError): Problem {
  if (error.statusCode === 413) return problem('payload-too-large', error.message);
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500)
    return problem('bad-request', error.message);
  return problem('internal-error', 'the webhook could not be stored; the producer will retry');
}

export const receiverPlugin: FastifyPluginAsync<ReceiverPluginOptions> = async (fastify, options) => {
  const bodyLimit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  fastify.removeAllContentTypeParsers();
  // Any media type: the producer sends JSON, but the signature, not the Content-Type, is what is trusted.
  // Even a malformed one (`;;`), which Fastify would refuse before any parser ran.
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
  fastify.addHook('onRequest', async (request) => {
    if (request.method === 'POST') request.headers['content-type'] = 'application/octet-stream';
  });

  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    if ((error.statusCode ?? 500) >= 500) request.log.error({ err: error }, 'receiver intake failed');
    return sendProblem(reply, problemFor(error));
  });

  fastify.post<{ Params: { source: string } }>('/webhooks/:source', { bodyLimit }, async (request, reply) => {
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const result = await acceptDelivery(options, {
      source: request.params.source,
      rawBody,
      headers: distinctHeaders(request.raw),
    });
    if (result.status === 200 && !result.duplicate) options.worker?.wake();
    return sendResult(reply, result);
  });

  // RFC 9110 §15.5.6: the path exists, the method does not (GET brings HEAD along).
  fastify.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/webhooks/:source',
    handler: async (request, reply) =>
      sendProblem(
        reply.header('allow', 'POST'),
        problem('method-not-allowed', `${request.method} is not allowed; webhooks are POSTed`),
      ),
  });
};

/** The not-found handler of a server that hosts only the receiver (the standalone one). */
export function strayRequestProblem(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(
    reply,
    problem(
      'not-found',
      `no route for ${request.method} ${request.url.split('?')[0]}; webhooks are POSTed to /webhooks/<source>`,
    ),
  );
}

/** Fastify's `frameworkErrors` option: a URL it cannot decode, as a problem. */
export function frameworkErrorProblem(error: FastifyError, _request: unknown, reply: FastifyReply): void {
  void sendProblem(
    reply,
    problem(
      error.code === 'FST_ERR_BAD_URL' ? 'not-found' : 'bad-request',
      error.code === 'FST_ERR_BAD_URL' ? 'the path is not valid percent-encoding' : error.message,
    ),
  );
}
