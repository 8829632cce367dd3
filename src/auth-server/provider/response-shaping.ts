// oidc-provider's answers, corrected where its defaults differ from the RFCs or from the rest of the
// service (docs/guides/signing-in-users.md, Errors: the most specific status, machine-readable bodies):
// - 401 invalid_client always carries WWW-Authenticate (RFC 6749 §5.2), not only after Basic auth.
// - a grant type the client is not registered for is unauthorized_client (RFC 6749 §5.2), not
//   invalid_request.
// - a server_error body carries the request id; the cause is in the log (provider-holder.ts).
// - a database outage (a lost connection, a timeout, a held lock) is 503 temporarily_unavailable with
//   Retry-After, like the API's 503 problem: clients retry it, where server_error says something broke.
//   (RFC 6749 registers temporarily_unavailable for the authorization endpoint, §4.1.2.1; the token
//   endpoint has no code of its own for it, and the status is what clients act on.)
// - a path no route serves is a 404 problem+json, and a route asked with another method a 405 with
//   Allow (RFC 9110 §15.5.6), as everywhere else in the service, instead of Koa's plain-text 404; a
//   plain OPTIONS (not a CORS preflight) is 204 with Allow.
import type { KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import { OUTAGE_RETRY_AFTER, PROBLEM_CONTENT_TYPE } from '../../http/problems/errors.ts';
import { isDatabaseOutage } from '../../http/problems/outage.ts';
import { PROBLEM_TYPES } from '../../http/problems/problems.ts';
import { routeKey } from './request-shaping.ts';

/** oidc-provider's message for a grant the client may not use (lib/actions/token.js). */
const GRANT_NOT_ALLOWED = 'requested grant type is not allowed for this client';

export interface ProviderRoutes {
  authorization: string;
  token: string;
  jwks: string;
  userinfo: string;
  revocation: string;
  introspection: string;
  end_session: string;
}

interface OAuthErrorBody {
  error: string;
  error_description?: string;
  request_id?: string;
}

/** The methods each of oidc-provider's routes answers, as it registers them with our features (GET implies HEAD). */
function routeMethods(routes: ProviderRoutes): Map<string, string[]> {
  const read = ['GET', 'HEAD'];
  const cors = (methods: string[]) => [...methods, 'OPTIONS'];
  return new Map(
    Object.entries({
      [routes.authorization]: [...read, 'POST'], // POST: a form, see request-shaping.ts
      [routes.token]: cors(['POST']),
      [routes.jwks]: cors(read),
      [routes.userinfo]: cors([...read, 'POST']),
      [routes.revocation]: cors(['POST']),
      [routes.introspection]: cors(['POST']),
      [routes.end_session]: [...read, 'POST'],
      [`${routes.end_session}/confirm`]: ['POST'],
      [`${routes.end_session}/success`]: read,
      '/.well-known/openid-configuration': cors(read),
      '/.well-known/oauth-authorization-server': cors(read),
    }).map(([path, methods]) => [routeKey(path), methods]),
  );
}

export function registerResponseShaping(provider: Provider, options: { routes: ProviderRoutes; issuer: string }): void {
  const methods = routeMethods(options.routes);
  const origin = new URL(options.issuer).origin;
  // oidc-provider answers an error from storage with server_error and emits the cause: note the outages.
  const outages = new WeakSet<object>();
  provider.on('server_error', (ctx: object, err: unknown) => isDatabaseOutage(err) && outages.add(ctx));
  provider.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      // Thrown outside a route's own error handler (saving the session after the route ran).
      if (!isDatabaseOutage(err)) throw err;
      provider.emit('server_error', ctx, err); // logged with the request id (provider-holder.ts)
      ctx.body = { error: 'server_error' };
    }
    if (outages.has(ctx)) answerOutage(ctx as KoaContextWithOIDC);
    const body = ctx.body as Partial<OAuthErrorBody> | undefined;
    if (typeof body?.error === 'string') correctOAuthError(ctx as KoaContextWithOIDC, body as OAuthErrorBody);
    // Koa's own 404: nothing answered (no route, another method, or an OPTIONS that is no CORS preflight).
    else if (ctx.status === 404 && ctx.body == null) answerUnanswered(ctx as KoaContextWithOIDC, methods, origin);
  });
}

function answerOutage(ctx: KoaContextWithOIDC): void {
  ctx.status = 503;
  ctx.set('retry-after', OUTAGE_RETRY_AFTER);
  const body = ctx.body as Partial<OAuthErrorBody> | undefined;
  if (typeof body?.error !== 'string') return; // an HTML error page keeps its generic text
  body.error = 'temporarily_unavailable';
  body.error_description = 'the service cannot complete requests right now; retry after the Retry-After delay';
}

function correctOAuthError(ctx: KoaContextWithOIDC, body: OAuthErrorBody): void {
  if (ctx.status === 401 && body.error === 'invalid_client' && !ctx.response.get('www-authenticate'))
    ctx.set('www-authenticate', 'Basic realm="signet"');
  if (body.error === 'invalid_request' && body.error_description === GRANT_NOT_ALLOWED)
    body.error = 'unauthorized_client';
  if (ctx.status >= 500) body.request_id = requestIdOf(ctx);
}

function answerUnanswered(ctx: KoaContextWithOIDC, methods: Map<string, string[]>, origin: string): void {
  const path = (ctx.req as { originalUrl?: string }).originalUrl?.split('?')[0] ?? ctx.path;
  const allowed = methods.get(routeKey(ctx.path));
  if (allowed && ctx.method === 'OPTIONS') {
    // RFC 9110 §9.3.7: a plain OPTIONS asks what the resource supports.
    ctx.status = 204;
    ctx.set('allow', allowed.join(', '));
    return;
  }
  const type = allowed ? PROBLEM_TYPES.methodNotAllowed : PROBLEM_TYPES.notFound;
  ctx.status = type.status;
  if (allowed) ctx.set('allow', allowed.join(', '));
  ctx.set('cache-control', 'no-store');
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = JSON.stringify({
    type: `${origin}/problems/${type.slug}`,
    title: type.title,
    status: type.status,
    detail: allowed ? `${ctx.method} is not supported on ${path}; use ${allowed.join(', ')}` : `no resource at ${path}`,
    instance: `${origin}${path}`, // absolute, like the API's problems
    requestId: requestIdOf(ctx),
  });
}

/** The id Fastify gave the request (middie copies it onto the raw request). */
export function requestIdOf(ctx: { req: unknown }): string | undefined {
  return (ctx.req as { id?: string }).id;
}
