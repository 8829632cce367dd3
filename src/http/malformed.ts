// Requests that never reach a route: HTTP/1.1 framing errors found by Node's parser, targets the
// router cannot decode, and Host header violations. They get problem+json like every other error,
// with a request id, instead of Fastify's or Node's own bodies.
import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PROBLEM_CONTENT_TYPE, sendProblem } from './errors.ts';
import { normalizeHost } from './forwarded.ts';
import { clip, Problem, PROBLEM_TYPES, type ProblemKey } from './problems.ts';

/** A request line that starts with a method token (RFC 9110 §9.1, §5.6.2), whatever follows. */
const METHOD_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ /;

/** Node's parser errors (llhttp codes) that have a more specific status than 400. */
const PARSER_ERRORS: Record<string, { key: ProblemKey; detail: string }> = {
  // RFC 9110 §9.1: a method the server does not recognize is 501. The parser knows every registered
  // method; the code also covers bytes that are no request line at all, which stay 400 (see below).
  HPE_INVALID_METHOD: { key: 'notImplemented', detail: 'the request method is not one this server implements' },
  // RFC 6585 §5; the request line counts too, so an over-long URL lands here.
  HPE_HEADER_OVERFLOW: {
    key: 'headerFieldsTooLarge',
    detail: `the request line and header fields exceed ${maxHeaderSize} bytes`,
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { key: 'payloadTooLarge', detail: 'the chunk extensions are too large' },
  // RFC 9110 §15.5.9: headers (or the whole request) not received within the server's timeouts.
  ERR_HTTP_REQUEST_TIMEOUT: { key: 'requestTimeout', detail: 'the request was not received in time' },
};

/** The server's own base URL for a problem `type` when no request was parsed: PUBLIC_URL, else the local address. */
function baseUrlOf(app: FastifyInstance, socket: Socket): string {
  if (app.publicUrlSetting) return app.publicUrlSetting;
  const address = socket.localAddress ?? '127.0.0.1';
  return `http://${address.includes(':') ? `[${address}]` : address}:${socket.localPort}`;
}

/**
 * Fastify `clientErrorHandler`: Node's parser could not read a request. There is no request object,
 * so the problem is written to the socket, and the connection is closed: after a framing error the
 * next message's start cannot be known (RFC 9112 §2.2, §11.2).
 */
export function clientErrorHandler(this: FastifyInstance, error: Error, socket: Socket): void {
  // What Node puts on a parser error (Fastify's ConnectionError type has rawPacket wrong).
  const err = error as Error & { code?: string; reason?: string; rawPacket?: Buffer };
  const busy = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage?.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || busy) {
    socket.destroy(); // the client is gone, or a response is half written: no status line can follow
    return;
  }
  const notARequestLine =
    err.code === 'HPE_INVALID_METHOD' && !METHOD_TOKEN.test(err.rawPacket?.toString('latin1', 0, 64) ?? '');
  const known = notARequestLine ? undefined : PARSER_ERRORS[err.code ?? ''];
  const type = PROBLEM_TYPES[known?.key ?? 'badRequest'];
  const detail = known?.detail ?? `the request is not valid HTTP/1.1${err.reason ? ` (${clip(err.reason)})` : ''}`;
  const requestId = randomUUID();
  const base = baseUrlOf(this, socket);
  // No `instance`: the request target was not (reliably) read.
  const body = JSON.stringify({
    type: `${base}/problems/${type.slug}`,
    title: type.title,
    status: type.status,
    detail,
    requestId,
  });
  this.log.debug({ err, reqId: requestId }, 'malformed request');
  socket.end(
    `HTTP/1.1 ${type.status} ${STATUS_CODES[type.status]}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `cache-control: no-store\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * Fastify `frameworkErrors`: the router could not take the target apart. Its request has been through
 * no hook, so the request id header is set here. FST_ERR_BAD_URL: invalid percent-encoding or
 * non-UTF-8 octets in the path (RFC 3986 §2.1, §2.5); FST_ERR_MAX_PARAM_LENGTH: a path segment over
 * the router's limit (RFC 9110 §15.5.15).
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    sendProblem(request, reply, new Problem('uriTooLong', 'a path segment is longer than this server accepts'));
  } else if (error.code === 'FST_ERR_BAD_URL') {
    sendProblem(request, reply, new Problem('badRequest', 'the path is not valid percent-encoded UTF-8'));
  } else {
    sendProblem(request, reply, new Problem('badRequest', 'the request cannot be routed'));
  }
}

/** What is wrong with the request's Host field lines, or null (RFC 9112 §3.2). */
function hostProblem(raw: IncomingMessage): string | null {
  let lines = 0;
  for (let i = 0; i < raw.rawHeaders.length; i += 2) {
    if (raw.rawHeaders[i]!.length === 4 && raw.rawHeaders[i]!.toLowerCase() === 'host') lines++;
  }
  if (lines > 1) return 'the request has more than one Host header field';
  if (lines === 0)
    return raw.httpVersionMajor === 1 && raw.httpVersionMinor === 0
      ? null
      : 'an HTTP/1.1 request needs a Host header field';
  // The same rule the forwarded headers follow (forwarded.ts): the host ends up in absolute URLs.
  return normalizeHost(raw.headers.host) === null ? 'the Host header field is not a valid host[:port]' : null;
}

/**
 * RFC 9112 §3.2: a server MUST answer 400 to a request without Host (HTTP/1.1), with more than one
 * Host line, or with an invalid Host. Node keeps only the first of several lines in `headers`, so
 * they are counted in rawHeaders. (Node's own check for a missing Host, which answers with an empty
 * body, is turned off in app.ts so this one answers.)
 */
export function registerHostCheck(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const problem = hostProblem(request.raw);
    if (problem === null) return done();
    sendProblem(request, reply, new Problem('badRequest', problem));
  });
}
