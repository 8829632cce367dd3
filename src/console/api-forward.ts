// How the backend-for-frontend hands a browser's /console/api/… call to the public API: in process
// (app.inject), with a bearer token the browser never sees, and only the headers that mean something to
// the API; the answer comes back with only the headers that mean something to the page.
import type { FastifyInstance, FastifyReply, FastifyRequest, LightMyRequestResponse } from 'fastify';
import { Problem } from '../http/problems/problems.ts';

/** The header the app sends the csrf_token of /console/session in (auth.routes.ts). */
export const CSRF_HEADER = 'x-signet-console-csrf';

const FORWARDED_REQUEST = [
  'content-type',
  'accept',
  'if-match',
  'if-none-match',
  'if-modified-since',
  'if-unmodified-since',
  'idempotency-key',
  'prefer',
];
const FORWARDED_RESPONSE = [
  'content-type',
  'etag',
  'location',
  'retry-after',
  'link',
  'last-modified',
  'cache-control',
  'vary',
];

/** The /api path this request stands for, normalized: `..` can never step out of /api/. */
export function apiTarget(url: string): string {
  const target = new URL(url.slice('/console'.length), 'http://console.invalid');
  if (!target.pathname.startsWith('/api/')) throw new Problem('notFound', 'the console forwards to /api/ only');
  return `${target.pathname}${target.search}`;
}

/**
 * The in-process call comes from the browser's address (as http/admission/forwarded.ts resolved it, behind trusted
 * proxies too), not inject's 127.0.0.1: the audit trail and the per-address rate limit see the person. The
 * API request gets its own id; one log line ties it to the console request's id.
 */
export async function forwardToApi(
  app: FastifyInstance,
  request: FastifyRequest,
  accessToken: string,
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${accessToken}` };
  if (request.headers.host) headers.host = request.headers.host;
  for (const name of FORWARDED_REQUEST) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const target = apiTarget(request.url);
  const response = await app.inject({
    method: request.method as 'GET',
    url: target,
    headers,
    remoteAddress: request.clientOrigin.ip,
    payload: Buffer.isBuffer(request.body) ? request.body : undefined,
  });
  request.log.info(
    { apiRequestId: response.headers['x-request-id'], statusCode: response.statusCode },
    'console call forwarded to the API',
  );
  return response;
}

/**
 * The API's answer for the page. It often carries no Cache-Control (a client of the API decides), but this
 * one was made with the user's token behind a cookie: no shared cache may keep it, and the browser's own
 * may not either (RFC 9111 §5.2.2.3, §5.2.2.7). `vary` goes along so a cache keeps representations apart.
 */
export function relayResponse(reply: FastifyReply, response: LightMyRequestResponse): FastifyReply {
  reply.code(response.statusCode);
  for (const name of FORWARDED_RESPONSE) {
    const value = response.headers[name];
    if (value !== undefined) reply.header(name, value);
  }
  if (response.headers['cache-control'] === undefined) reply.header('cache-control', 'private, no-store');
  return reply.send(response.rawPayload.length > 0 ? response.rawPayload : null);
}
