// The console's calls to its own authorization server: token (RFC 6749 §4.1.3, §6) and revocation
// (RFC 7009), in process through app.inject, the same public endpoints any client uses.
import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import { CONSOLE_CLIENT_ID } from './client.ts';

export interface TokenSet {
  accessToken: string;
  refreshToken: string | undefined;
  idToken: string | undefined;
  scope: string;
  expiresAt: Date;
}

export class TokenRequestError extends Error {
  readonly status: number;
  readonly error: string;
  constructor(status: number, error: string, description: string) {
    super(`${error}: ${description}`);
    this.status = status;
    this.error = error;
  }
}

export interface OAuthEndpoints {
  /** The issuer's path (`/oauth`): requests go to `${path}/token` … */
  issuerPath: string;
  /** The Host the issuer is reached under, so oidc-provider sees its own origin. */
  host: string;
}

async function postForm(app: FastifyInstance, where: OAuthEndpoints, path: string, form: Record<string, string>) {
  return app.inject({
    method: 'POST',
    url: `${where.issuerPath}${path}`,
    headers: { host: where.host, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ client_id: CONSOLE_CLIENT_ID, ...form }).toString(),
  });
}

async function tokenRequest(
  app: FastifyInstance,
  where: OAuthEndpoints,
  form: Record<string, string>,
  now: Date,
): Promise<TokenSet> {
  const response = await postForm(app, where, '/token', form);
  const body = response.json() as Record<string, unknown>;
  if (response.statusCode !== 200 || typeof body.access_token !== 'string')
    throw new TokenRequestError(
      response.statusCode,
      String(body.error ?? 'server_error'),
      String(body.error_description ?? ''),
    );
  return {
    accessToken: body.access_token,
    refreshToken: typeof body.refresh_token === 'string' ? body.refresh_token : undefined,
    idToken: typeof body.id_token === 'string' ? body.id_token : undefined,
    scope: typeof body.scope === 'string' ? body.scope : '',
    expiresAt: new Date(now.getTime() + Number(body.expires_in ?? 0) * 1000),
  };
}

export function exchangeCode(
  app: FastifyInstance,
  where: OAuthEndpoints,
  input: { code: string; verifier: string; redirectUri: string },
  now: Date,
): Promise<TokenSet> {
  const form = {
    grant_type: 'authorization_code',
    code: input.code,
    code_verifier: input.verifier,
    redirect_uri: input.redirectUri,
  };
  return tokenRequest(app, where, form, now);
}

/** Refresh tokens rotate on every use (provider.ts): the answer carries the one to keep. */
export function refreshTokens(
  app: FastifyInstance,
  where: OAuthEndpoints,
  refreshToken: string,
  now: Date,
): Promise<TokenSet> {
  return tokenRequest(app, where, { grant_type: 'refresh_token', refresh_token: refreshToken }, now);
}

/** RFC 7009 §2: revoking the refresh token revokes its grant, and with it the access tokens issued from it. */
export async function revokeToken(app: FastifyInstance, where: OAuthEndpoints, refreshToken: string): Promise<void> {
  await postForm(app, where, '/revoke', { token: refreshToken, token_type_hint: 'refresh_token' });
}

/**
 * Ends the browser's Signet session at the authorization server, server-side, as its confirmation page
 * would (RP-Initiated Logout 1.0 §2, oidc-provider's end_session and its confirm step): the browser's own
 * cookies (`cookie`, its Cookie header) name the session, the console's ID token is the hint (§2: with a
 * valid hint the OP need not ask). The session and every grant in it are gone before the console answers,
 * so a browser that never shows or confirms a page is signed out of Signet all the same. In process, so
 * the hint never travels in a browser's URL; the request log keeps no hint (http/ops/request-log.ts).
 * Returns the provider's Set-Cookie lines (its session cookie cleared) and whether a session was ended.
 */
export async function endSignetSession(
  app: FastifyInstance,
  where: OAuthEndpoints,
  input: { idToken: string | undefined; cookie: string | undefined },
): Promise<{ ended: boolean; setCookie: string[] }> {
  if (!input.cookie) return { ended: false, setCookie: [] }; // no session cookie: nothing to end here
  const query = new URLSearchParams({ client_id: CONSOLE_CLIENT_ID });
  if (input.idToken) query.set('id_token_hint', input.idToken);
  const start = await app.inject({
    method: 'GET',
    url: `${where.issuerPath}/session/end?${query}`,
    headers: { host: where.host, cookie: input.cookie },
  });
  // The confirmation form's one-time secret, bound to the session (oidc-provider's xsrf check).
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(start.body)?.[1];
  if (start.statusCode !== 200 || !xsrf) return { ended: false, setCookie: [] };
  const confirm = await app.inject({
    method: 'POST',
    url: `${where.issuerPath}/session/end/confirm`,
    headers: {
      host: where.host,
      cookie: withCookies(input.cookie, setCookiesOf(start.headers['set-cookie'])),
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: new URLSearchParams({ xsrf, logout: 'yes' }).toString(),
  });
  const ended = confirm.statusCode >= 300 && confirm.statusCode < 400;
  return { ended, setCookie: ended ? setCookiesOf(confirm.headers['set-cookie']) : [] };
}

function setCookiesOf(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  return Array.isArray(header) ? header : [header];
}

/** A Cookie header with the values a response set replacing those of the same name. */
function withCookies(cookie: string, setCookie: string[]): string {
  const jar = new Map<string, string>();
  for (const pair of cookie.split(/; */)) {
    const eq = pair.indexOf('=');
    if (eq > 0) jar.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  for (const line of setCookie) {
    const pair = line.split(';')[0]!;
    const eq = pair.indexOf('=');
    if (eq > 0) jar.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
}

/**
 * The ID token's claims. Its signature is not checked: it came straight from our own token endpoint in
 * process, which OIDC Core §3.1.3.7 (6) allows in place of the signature check; nonce and audience are.
 */
export function idTokenClaims(idToken: string | undefined, nonce: string): Record<string, unknown> {
  if (!idToken) throw new TokenRequestError(502, 'invalid_response', 'the token response has no ID token');
  const claims = decodeJwt(idToken);
  const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (claims.nonce !== nonce || !audience.includes(CONSOLE_CLIENT_ID))
    throw new TokenRequestError(502, 'invalid_response', 'the ID token does not answer this sign-in');
  return claims;
}
