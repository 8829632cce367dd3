// Requests that never reach a route: HTTP/1.1 framing errors found by Node's parser, targets the
// router cannot decode, and Host header violations. They get problem+json like every other error,
// with a request id, instead of Fastify's or Node's own bodies.
import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SEVERAL_AUTHORIZATION_LINES } from '../bearer/auth.ts';
import { PROBLEM_CONTENT_TYPE, sendProblem } from './errors.ts';
import { normalizeHost } from '../admission/forwarded.ts';
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

/** A connection as Node's HTTP server keeps it: the response being written now, if any, and its parser. */
type HttpSocket = Socket & {
  _httpMessage?: ServerResponse | null;
  parser?: { incoming?: IncomingMessage | null } | null;
};

/** Connections whose parser error is being answered: bytes that follow are not parsed again. */
const answering = new WeakSet<Socket>();

/**
 * Calls `then` once no response is in flight on the connection, or never if it closes first.
 * RFC 9112 §9.3.2: responses to pipelined requests go out in the order the requests came. Node writes
 * one response at a time (socket._httpMessage) and queues the responses to later pipelined requests;
 * when one finishes it attaches the next, before our 'finish' listener (added later) runs. So waiting
 * until `_httpMessage` stays empty waits for every earlier request's answer, including a handler still
 * awaiting the database. Nothing outlives the connection: both listeners go when either fires.
 */
export function afterResponsesInFlight(socket: HttpSocket, then: () => void, broken?: IncomingMessage): void {
  const response = socket._httpMessage;
  // The broken request's own response never finishes (its handler waits for a body that will not
  // come): the wait ends when it is the one in flight.
  if (!response || (broken !== undefined && response.req === broken)) return then();
  const stop = (): void => {
    response.off('finish', next);
    socket.off('close', stop);
  };
  const next = (): void => {
    stop();
    afterResponsesInFlight(socket, then, broken);
  };
  response.once('finish', next);
  socket.once('close', stop);
}

/**
 * Fastify `clientErrorHandler`: Node's parser could not read a request. There is no request object,
 * so the problem is written to the socket, and the connection is closed: after a framing error the
 * next message's start cannot be known (RFC 9112 §2.2, §11.2). Responses to requests pipelined before
 * the bad one are written first (see afterResponsesInFlight).
 */
export function clientErrorHandler(this: FastifyInstance, error: Error, socket: Socket): void {
  // What Node puts on a parser error (Fastify's ConnectionError type has rawPacket wrong).
  const err = error as Error & { code?: string; reason?: string; rawPacket?: Buffer };
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy(); // the client is gone
    return;
  }
  // After a parser error Node's parser fails again on every byte that follows: answer only the first.
  if (answering.has(socket)) return;
  answering.add(socket);
  const broken = brokenRequest(socket as HttpSocket);
  afterResponsesInFlight(
    socket,
    () => {
      // An earlier response may have closed the connection (Connection: close), or the client left; or
      // the broken request was already answered before its body (a 401): no status line can follow.
      const started = broken !== undefined && (socket as HttpSocket)._httpMessage?.headersSent === true;
      if (socket.writable && !started) socket.end(malformedRequestAnswer(this, err, socket));
      // Its handler would wait for the rest of the body for ever: the connection goes, and with it the request.
      if (broken !== undefined) socket.destroySoon();
    },
    broken,
  );
}

/**
 * The request whose body the parser failed in (a bad chunk), if that is where it failed: it was handed
 * to the app when its headers arrived, but will never complete.
 */
function brokenRequest(socket: HttpSocket): IncomingMessage | undefined {
  const incoming = socket.parser?.incoming;
  return incoming && !incoming.complete ? incoming : undefined;
}

/** The problem+json response, status line to body, to a request Node's parser rejected. */
function malformedRequestAnswer(
  app: FastifyInstance,
  err: Error & { code?: string; reason?: string; rawPacket?: Buffer },
  socket: Socket,
): string {
  const notARequestLine = err.code === 'HPE_INVALID_METHOD' && !METHOD_TOKEN.test(failedMessageStart(err));
  const known = notARequestLine ? undefined : PARSER_ERRORS[err.code ?? ''];
  const detail = known?.detail ?? `the request is not valid HTTP/1.1${err.reason ? ` (${clip(err.reason)})` : ''}`;
  const requestId = randomUUID();
  app.log.debug({ err, reqId: requestId }, 'malformed request');
  // No `instance`: the request target was not (reliably) read.
  return rawProblemResponse(baseUrlOf(app, socket), known?.key ?? 'badRequest', detail, requestId);
}

/** The longest method a request line can open with, for the look back below (M-SEARCH, MKCALENDAR…). */
const METHOD_LOOKBACK = 32;

/**
 * The first bytes of the message the parser failed in. `rawPacket` is the whole chunk read, which for a
 * pipelined follower starts with the request before it (RFC 9112 §9.3.2), so its opening says nothing
 * about the bad one; `bytesParsed` is where the parser stopped inside the method, after the letters it
 * matched. Stepping back over those letters finds where the failed message starts, so a follower is
 * judged by its own bytes and gets the answer it gets alone.
 */
function failedMessageStart(err: { rawPacket?: Buffer; bytesParsed?: number }): string {
  const packet = err.rawPacket;
  if (!packet) return '';
  const at = Math.min(typeof err.bytesParsed === 'number' ? err.bytesParsed : 0, packet.length);
  let start = at;
  while (start > 0 && at - start < METHOD_LOOKBACK && isMethodLetter(packet[start - 1]!)) start--;
  return packet.toString('latin1', start, start + 64);
}

/** The characters of every method Node's parser knows: upper-case letters and `-` (M-SEARCH). */
function isMethodLetter(byte: number): boolean {
  return (byte >= 0x41 && byte <= 0x5a) || byte === 0x2d;
}

/** A complete problem+json response with `connection: close`, for a socket no ServerResponse writes to. */
function rawProblemResponse(base: string, key: ProblemKey, detail: string, requestId: string): string {
  const type = PROBLEM_TYPES[key];
  const body = JSON.stringify({
    type: `${base}/problems/${type.slug}`,
    title: type.title,
    status: type.status,
    detail,
    requestId,
  });
  return (
    `HTTP/1.1 ${type.status} ${STATUS_CODES[type.status]}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `cache-control: no-store\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`
  );
}

/** How long a refused CONNECT's connection is kept reading after the answer, at most (RFC 9112 §9.6). */
const CONNECT_LINGER_MS = 2000;

/**
 * CONNECT asks for a tunnel (RFC 9110 §9.3.6), which a proxy opens; this origin server opens none, for
 * any target. That is 501 (RFC 9110 §15.6.2: "not capable of supporting it for any resource"), not 405
 * (§15.5.6), which says the method suits other resources of the server and must list them in Allow.
 * Node hands CONNECT to 'connect' listeners with the socket detached from its parser, and with none
 * destroys the socket without an answer: this listener answers with a problem and closes.
 */
export function registerConnectAnswer(app: FastifyInstance): void {
  app.server.on('connect', (_request: IncomingMessage, socket: Socket) => answerConnect(app, socket));
}

function answerConnect(app: FastifyInstance, socket: Socket): void {
  // Node took its own listeners off the socket, 'error' among them: a reset must not be uncaught.
  socket.on('error', () => socket.destroy());
  // Read and drop what follows (no tunnel is opened), so the client's close is seen.
  socket.resume();
  // A CONNECT pipelined after other requests is answered after them, like a malformed request.
  afterResponsesInFlight(socket, () => {
    if (!socket.writable) return void socket.destroy();
    const requestId = randomUUID();
    app.log.debug({ reqId: requestId }, 'CONNECT refused');
    const detail = 'this server is not a proxy: CONNECT is implemented for no target';
    socket.end(rawProblemResponse(baseUrlOf(app, socket), 'notImplemented', detail, requestId));
    // A lingering close, as early-response.ts does: an immediate one with unread bytes would reset.
    const timer = setTimeout(() => socket.destroy(), CONNECT_LINGER_MS).unref();
    socket.once('close', () => clearTimeout(timer));
  });
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

/** Host and Authorization field lines, counted in one pass over rawHeaders (Node keeps only the first of each in `headers`). */
function fieldLines(raw: IncomingMessage): { host: number; authorization: number } {
  let host = 0;
  let authorization = 0;
  const names = raw.rawHeaders;
  for (let i = 0; i < names.length; i += 2) {
    const name = names[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') host++;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorization++;
  }
  return { host, authorization };
}

/** What is wrong with the request's Host field lines, or null (RFC 9112 §3.2). */
function hostProblem(raw: IncomingMessage, lines: number): string | null {
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
 *
 * Several Authorization lines (see hasSeveralAuthorizationLines) on a route that requires no scope get
 * the same 400: the authorization server's endpoints, which would otherwise authenticate a client by
 * the first line alone, and public routes. A scoped API route refuses them in auth.ts, with a Bearer
 * challenge. A step of the shared onRequest hook (request-pipeline.ts).
 */
export function hostCheck(request: FastifyRequest, reply: FastifyReply): Problem | undefined {
  const lines = fieldLines(request.raw);
  const host = hostProblem(request.raw, lines.host);
  if (host !== null) {
    // A message this broken says nothing reliable about where the next one starts or whom it is for:
    // the connection closes after the 400 (RFC 9110 §7.2, RFC 9112 §3.2, §9.6).
    reply.header('connection', 'close');
    return new Problem('badRequest', host);
  }
  if (lines.authorization > 1 && !request.routeOptions.config.scope)
    return new Problem('badRequest', SEVERAL_AUTHORIZATION_LINES);
  return undefined;
}
