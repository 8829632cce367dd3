// Requests in the exact shapes docs/guides/signing-in-users.md shows, made standard before oidc-provider sees them:
// - GET /authorize without code_challenge_method: S256, the only method we support (clients may send
//   none; RFC 7636 §4.3's `plain` default is refused as RFC 9700 §2.1.1 recommends).
// - scope `<resource_uri>/.default` (client credentials, docs/guides/signing-in-users.md) and, in the code flow, a
//   request that names no API scope: every scope the client is registered for on that resource (RFC 8707 `resource`).
// - client credentials without a scope: the same `.default` (RFC 6749 §3.3 default scope).
// - POST /token with a `code` and no `grant_type` (the code exchange docs/guides/signing-in-users.md shows):
//   authorization_code.
// - a token request with no client authentication at all: 401 invalid_client (RFC 6749 §5.2).
// - a client-credentials scope naming no known resource or scope: invalid_scope (RFC 6749 §5.2), not a
//   token without scopes.
// - POST /authorize (OIDC Core §3.1.2.1) and POST /session/end (RP-Initiated Logout 1.0 §2) with a form
//   body: 303 to the same endpoint with the form as its query (see redirectFormToQuery).
// oidc-provider's router matches paths case-insensitively, with or without a trailing slash, and HEAD as
// GET, so the shaping recognises its routes the same way.
import { parse as parseForm, stringify as stringifyForm } from 'node:querystring';
import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { Database } from '../../db/schema.ts';
import { PROBLEM_CONTENT_TYPE } from '../../http/problems/errors.ts';
import { PROBLEM_TYPES, type ProblemType } from '../../http/problems/problems.ts';
import { findClient } from '../clients/clients.repository.ts';
import { parseDefaultScope, type ResourceDefinition } from './scopes.ts';

const FORM_LIMIT_BYTES = 56 * 1024; // oidc-provider's own limit
/** The endpoints whose POST form is answered with a GET of the same request (redirectFormToQuery). */
const POST_AS_GET_ROUTES = new Set(['/authorize', '/session/end']);
/** Well under Node's 16 KiB for the request line and headers, which the GET must fit in with its cookies. */
const REDIRECT_QUERY_LIMIT_BYTES = 8 * 1024;

interface ShapingSettings {
  resources: ResourceDefinition[];
  apiScopes: Set<string>;
  db: Kysely<Database>;
}

export function registerRequestShaping(provider: Provider, settings: ShapingSettings): void {
  provider.use(async (ctx, next) => {
    const route = routeKey(ctx.path);
    const read = ctx.method === 'GET' || ctx.method === 'HEAD';
    if (read && route === '/authorize') await shapeAuthorizationQuery(ctx as KoaContextWithOIDC, settings);
    if (ctx.method === 'POST' && POST_AS_GET_ROUTES.has(route)) await redirectFormToQuery(ctx as KoaContextWithOIDC);
    if (ctx.method === 'POST' && route === '/token' && ctx.is('application/x-www-form-urlencoded'))
      await shapeTokenRequest(ctx as KoaContextWithOIDC, settings);
    if (ctx.body === undefined) await next();
  });
}

/** The path as oidc-provider's router compares it: case-insensitive, one trailing slash ignored. */
export function routeKey(path: string): string {
  const lower = path.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
}

/** A token-endpoint error answered before oidc-provider runs, in its format (RFC 6749 §5.2). */
function answerTokenError(ctx: KoaContextWithOIDC, status: number, error: string, description: string): void {
  ctx.status = status;
  ctx.set('cache-control', 'no-store');
  if (status === 401) ctx.set('www-authenticate', 'Basic realm="signet"');
  ctx.body = { error, error_description: description };
}

async function shapeAuthorizationQuery(ctx: KoaContextWithOIDC, settings: ShapingSettings): Promise<void> {
  const query = new URLSearchParams(ctx.querystring);
  let changed = false;
  if (query.has('code_challenge') && !query.has('code_challenge_method')) {
    query.set('code_challenge_method', 'S256');
    changed = true;
  }
  const clientId = query.get('client_id');
  const scopes = query.getAll('scope');
  const scope = scopes.length === 1 ? scopes[0]! : null; // twice: left alone for oidc-provider to refuse (RFC 6749 §3.1)
  if (clientId && scope !== null) {
    const expanded = await expandScope(scope, clientId, settings, { addDefaultResource: true });
    if (expanded && expanded.scope !== scope) {
      query.set('scope', expanded.scope);
      changed = true;
    }
  }
  if (changed) {
    // oidc-provider derives its mount path from originalUrl minus url: keep the two consistent.
    const raw = ctx.req as typeof ctx.req & { originalUrl?: string };
    const mount = raw.originalUrl ? raw.originalUrl.slice(0, raw.originalUrl.indexOf(ctx.url)) : '';
    ctx.querystring = query.toString();
    if (raw.originalUrl) raw.originalUrl = `${mount}${ctx.url}`;
  }
}

/**
 * POST /authorize and POST /session/end carry the GET's parameters as a form (OIDC Core §3.1.2.1,
 * RP-Initiated Logout 1.0 §2). They are answered with 303 See Other to the same endpoint with the form
 * as its query, which the browser follows with a GET, so one code path serves both methods (the GET's
 * shaping above included). Not oidc-provider's `enableHttpPostMethods`: it requires the session cookie
 * to be SameSite=None, which browsers refuse without Secure (plain-HTTP development) and which sends it
 * on every cross-site request; a POST from the relying party's site carries no SameSite=Lax cookie, but
 * the GET it turns into does (a top-level navigation), so the user's session is found: single sign-on
 * works, and logout ends the session the browser really has.
 */
async function redirectFormToQuery(ctx: KoaContextWithOIDC): Promise<void> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    return answerProblem(
      ctx,
      PROBLEM_TYPES.unsupportedMediaType,
      `POST ${ctx.path} takes an application/x-www-form-urlencoded body; or send its parameters as a GET query`,
    );
  const raw = await readBody(ctx);
  if (raw === undefined)
    return answerProblem(
      ctx,
      PROBLEM_TYPES.payloadTooLarge,
      `the request body is larger than ${FORM_LIMIT_BYTES} bytes`,
    );
  // Parsed and re-encoded, so the query says exactly what the form said (repeated parameters included,
  // which oidc-provider then refuses as it would in a GET).
  const query = new URLSearchParams(raw.toString('utf8')).toString();
  if (query.length > REDIRECT_QUERY_LIMIT_BYTES)
    return answerProblem(
      ctx,
      PROBLEM_TYPES.payloadTooLarge,
      `the form is larger than ${REDIRECT_QUERY_LIMIT_BYTES} bytes once URL-encoded, too large to be sent on as a GET`,
    );
  // Absolute, on the issuer's origin (plugin.ts pins every request to it): the path can never be read
  // as another host's.
  ctx.redirect(`${issuerOrigin(ctx)}${requestPath(ctx)}${query ? `?${query}` : ''}`);
  ctx.status = 303; // RFC 9110 §15.4.4: the browser retrieves the target with GET
  ctx.set('cache-control', 'no-store');
}

/**
 * A problem+json answer (RFC 9457) for a request refused before oidc-provider runs, as response-shaping.ts words them.
 */
function answerProblem(ctx: KoaContextWithOIDC, type: ProblemType, detail: string): void {
  const path = requestPath(ctx);
  ctx.status = type.status;
  ctx.set('cache-control', 'no-store');
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = JSON.stringify({
    type: `${issuerOrigin(ctx)}/problems/${type.slug}`,
    title: type.title,
    status: type.status,
    detail,
    instance: `${issuerOrigin(ctx)}${path}`,
    requestId: (ctx.req as { id?: string }).id,
  });
}

/**
 * The issuer's origin: plugin.ts pins every request's forwarded host and protocol to it (koa's `origin` is the Origin
 * header).
 */
function issuerOrigin(ctx: KoaContextWithOIDC): string {
  return `${ctx.protocol}://${ctx.host}`;
}

/** The path as the client sent it, the mount included (oidc-provider sees it without). */
function requestPath(ctx: KoaContextWithOIDC): string {
  return (ctx.req as { originalUrl?: string }).originalUrl?.split('?')[0] ?? ctx.path;
}

async function shapeTokenRequest(ctx: KoaContextWithOIDC, settings: ShapingSettings): Promise<void> {
  const raw = await readFormOnce(ctx);
  if (raw === undefined)
    return answerTokenError(ctx, 413, 'invalid_request', `the request body is larger than ${FORM_LIMIT_BYTES} bytes`);
  const body = parseForm(raw.toString('utf8'));
  const clientId = typeof body.client_id === 'string' ? body.client_id : basicClientId(ctx.get('authorization'));
  if (body.client_id === undefined && !ctx.get('authorization')) {
    return answerTokenError(
      ctx,
      401,
      'invalid_client',
      'no client authentication: send client_id and client_secret, or HTTP Basic',
    );
  }
  let changed = false;
  if (body.grant_type === undefined && body.code !== undefined) {
    body.grant_type = 'authorization_code';
    changed = true;
  }
  if (body.grant_type === 'client_credentials') {
    // RFC 6749 §3.3: no scope means the default one, here `<resource>/.default` (resource given or the API).
    // An unknown `resource` is left to oidc-provider, which answers invalid_target (RFC 8707 §2).
    if (body.scope === undefined || body.scope === '') {
      const resource = typeof body.resource === 'string' ? body.resource : settings.resources[0]?.uri;
      if (resource && settings.resources.some((r) => r.uri === resource)) body.scope = `${resource}/.default`;
    }
    if (typeof body.scope === 'string') {
      const unknown = body.scope
        .split(' ')
        .filter((s) => s && !settings.apiScopes.has(s) && !parseDefaultScope(s, settings.resources));
      if (unknown.length > 0)
        return answerTokenError(
          ctx,
          400,
          'invalid_scope',
          `unknown scope ${unknown.join(' ')}: use ${settings.resources.map((r) => `${r.uri}/.default`).join(' or ')}, or scopes of the API`,
        );
      const expanded = clientId
        ? await expandScope(body.scope, clientId, settings, { addDefaultResource: false })
        : undefined;
      if (expanded) {
        body.scope = expanded.scope;
        if (expanded.resource && body.resource === undefined) body.resource = expanded.resource;
      }
      changed = true;
    }
  }
  if (!changed) return replayBody(ctx, raw);
  // Re-encoding can lengthen the body (spaces become %20): oidc-provider would refuse it with a 400.
  const rewritten = Buffer.from(stringifyForm(body));
  if (rewritten.length > FORM_LIMIT_BYTES)
    return answerTokenError(
      ctx,
      413,
      'invalid_request',
      `the request body is larger than ${FORM_LIMIT_BYTES} bytes once its scopes are expanded`,
    );
  replayBody(ctx, rewritten);
}

/**
 * Hands oidc-provider the rewritten body as if it were the request stream it reads itself
 * (selective_body.js reads `req` while it is readable; a pre-parsed `req.body` works too but makes it
 * print a warning on every start).
 */
function replayBody(ctx: KoaContextWithOIDC, body: Buffer): void {
  const original = ctx.req;
  const replay = Readable.from([body]);
  original.headers['content-length'] = String(body.length);
  const req = new Proxy(original, {
    get(target, property) {
      if (property === 'readable') return true;
      if (property === 'iterator') return (options?: { destroyOnReturn?: boolean }) => replay.iterator(options);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  ctx.req = req;
  ctx.request.req = req;
}

/**
 * Replaces `<resource>/.default` with the client's scopes on that resource; in the code flow
 * (addDefaultResource), a request naming no API scope gets the client's API scopes added.
 */
async function expandScope(
  scope: string,
  clientId: string,
  settings: ShapingSettings,
  options: { addDefaultResource: boolean },
): Promise<{ scope: string; resource?: string } | undefined> {
  const requested = scope.split(' ').filter(Boolean);
  const defaults = requested.map((s) => parseDefaultScope(s, settings.resources)).filter((r) => r !== undefined);
  const namesApiScope = requested.some((s) => settings.apiScopes.has(s));
  if (defaults.length === 0 && (namesApiScope || !options.addDefaultResource)) return undefined;
  const client = await findClient(settings.db, clientId);
  if (!client) return undefined; // oidc-provider answers invalid_client
  const resource = defaults[0] ?? settings.resources[0];
  if (!resource) return undefined;
  const granted = client.scopes.filter((s) => resource.scopes.includes(s));
  const kept = requested.filter((s) => parseDefaultScope(s, settings.resources) === undefined);
  return { scope: [...new Set([...kept, ...granted])].join(' '), resource: defaults[0]?.uri };
}

/** The client_id of HTTP Basic client authentication (RFC 6749 §2.3.1), when that is what was sent. */
export function basicClientId(authorization: string): string | undefined {
  const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(authorization);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return undefined;
  try {
    return decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, '%20')); // RFC 6749 §2.3.1
  } catch {
    return undefined;
  }
}

const FORMS = new WeakMap<object, Buffer | undefined>();

/**
 * The request's form body, read once: the endpoint limits (endpoint-limits.ts) read it for the client_id
 * before the token shaping above rewrites it; each step replays what it read for the next, and
 * oidc-provider reads the last replay. Undefined when it is larger than the limit.
 */
export async function readFormOnce(ctx: KoaContextWithOIDC): Promise<Buffer | undefined> {
  if (FORMS.has(ctx)) return FORMS.get(ctx);
  const raw = await readBody(ctx);
  FORMS.set(ctx, raw);
  if (raw) replayBody(ctx, raw);
  return raw;
}

/** The body's bytes, or undefined when it is larger than the limit. */
async function readBody(ctx: KoaContextWithOIDC): Promise<Buffer | undefined> {
  const declared = ctx.request.length;
  if (declared !== undefined && declared > FORM_LIMIT_BYTES) return undefined;
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of ctx.req) {
    received += (chunk as Buffer).length;
    if (received > FORM_LIMIT_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
