// Raw requests to the token endpoint in the exact shapes docs/guides/signing-in-users.md shows, and small JWT readers.
import assert from 'node:assert/strict';
import type { AuthTestServer } from './auth-server.ts';
import { expectStatus } from './expect.ts';
import { fetchWithin } from './http.ts';
import { pkcePair, runAuthorizationFlow, type FlowResult } from './oauth-flow.ts';

export interface TokenResult {
  status: number;
  headers: Headers;
  /** The parsed JSON answer; empty when the answer was not JSON (then `text` shows what it was). */
  body: Record<string, unknown>;
  /** The answer as sent, for assertion messages (expectStatus shows it). */
  text: string;
}

export async function tokenRequest(
  server: AuthTestServer,
  params: Record<string, string>,
  options: { basic?: [string, string]; headers?: Record<string, string> } = {},
): Promise<TokenResult> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', ...options.headers };
  if (options.basic)
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(options.basic[0])}:${encodeURIComponent(options.basic[1])}`).toString('base64')}`;
  const response = await fetchWithin(`${server.issuer}/token`, {
    method: 'POST',
    headers,
    body: new URLSearchParams(params).toString(),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON (a 503 from the overload guard, a proxy's page): `text` keeps it for the message.
  }
  return { status: response.status, headers: response.headers, body, text };
}

/**
 * `field` of a successful token response (`access_token`, `id_token`, `refresh_token`). A refused request
 * fails here with its status and body, not later on a missing token.
 */
export function tokenFrom(result: TokenResult, field = 'access_token', what = 'token request'): string {
  expectStatus(result, 200, what);
  const value = result.body[field];
  assert.equal(typeof value, 'string', `${what}: no ${field} in ${result.text}`);
  return value as string;
}

export function jwtParts(token: unknown): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const parts = typeof token === 'string' ? token.split('.') : [];
  // A response without the token passes undefined here: say so rather than fail inside JSON.parse.
  assert.ok(parts.length === 3, `not a JWT (three dot-separated parts): ${String(token)}`);
  const [header = '', payload = ''] = parts;
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>,
  };
}

export interface CodeFlow {
  code: string;
  verifier: string;
  flow: FlowResult;
}

/**
 * The guide's authorization request (docs/guides/signing-in-users.md): response_type, client_id, code_challenge, scope;
 * nothing else unless given.
 */
export async function authorizeWithLogin(
  server: AuthTestServer,
  client: { clientId: string },
  user: { email: string; password: string },
  extra: Record<string, string> = {},
  flowOptions: Partial<Parameters<typeof runAuthorizationFlow>[0]> = {},
): Promise<CodeFlow> {
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: client.clientId,
    code_challenge: challenge,
    scope: 'openid profile email',
    ...extra,
  });
  const flow = await runAuthorizationFlow({
    base: server.url,
    authorizeQuery: query.toString(),
    email: user.email,
    password: user.password,
    ...flowOptions,
  });
  const code = flow.callback.searchParams.get('code');
  if (!code) throw new Error(`no code in ${flow.callback.href}`);
  return { code, verifier, flow };
}

/** The guide's code exchange: code, code_verifier, client_id, client_secret (no grant_type). */
export function exchangeCode(
  server: AuthTestServer,
  client: { clientId: string; clientSecret: string | undefined },
  flow: { code: string; verifier: string },
): Promise<TokenResult> {
  return tokenRequest(server, {
    code: flow.code,
    code_verifier: flow.verifier,
    client_id: client.clientId,
    ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
  });
}

export function refresh(
  server: AuthTestServer,
  client: { clientId: string; clientSecret: string | undefined },
  refreshToken: unknown,
): Promise<TokenResult> {
  return tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: String(refreshToken),
    client_id: client.clientId,
    ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
  });
}
