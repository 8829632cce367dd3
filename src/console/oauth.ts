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
