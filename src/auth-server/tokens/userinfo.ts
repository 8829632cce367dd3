// UserInfo (OIDC Core §5.3) for the API access tokens of the code flow, in front of oidc-provider's own.
//
// Why our own: oidc-provider's UserInfo only accepts the opaque tokens it stores and refuses any token
// with an audience (lib/actions/userinfo.js, "token audience prevents accessing the userinfo
// endpoint"). A client with API scopes gets an RFC 9068 JWT whose `aud` is the API (RFC 8707), which
// oidc-provider neither stores nor lets into UserInfo, and no configuration changes either. Relying
// parties call UserInfo with the access token of the code flow by default (OIDC Core §5.3.1), so this
// answers for those JWTs; opaque tokens (clients that only sign users in) still go to oidc-provider.
//
// A JWT is accepted when it is an access token (`typ: at+jwt`, RFC 9068 §4) signed with our keys, from
// this issuer, unexpired, for one of our resources, and carries the `openid` scope: its grant included
// openid, which the token records beside the API scopes (USERINFO_SCOPES, provider.ts). The claims
// follow its scopes (OIDC Core §5.4). Unlike the API, which trusts a token until it expires, UserInfo
// also refuses a token whose grant was revoked, as introspection does (isStillGranted).
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
} from 'jose';
import type { Kysely } from 'kysely';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { Database } from '../../db/schema.ts';
import { findUserClaims, type UserClaims } from '../identity/accounts.ts';
import { findClient } from '../clients/clients.repository.ts';
import { isStillGranted, issuanceRecords } from './introspection.ts';
import type { KyselyAdapter } from '../provider/oidc-adapter.ts';
import { routeKey } from '../provider/request-shaping.ts';
import { OIDC_SCOPE_CLAIMS, type ResourceDefinition } from '../provider/scopes.ts';

interface UserinfoSettings {
  issuer: string;
  /** The path oidc-provider serves UserInfo at, relative to the issuer. */
  route: string;
  resources: ResourceDefinition[];
  /** The published (public) signing keys, retired ones included (keys.ts). */
  jwks: JSONWebKeySet;
  /** The access-token signing algorithm: the only one an access token can carry. */
  algorithm: string;
  db: Kysely<Database>;
}

/** An RFC 6750 §3.1 refusal. */
class Refusal {
  readonly status: 401 | 403;
  readonly error: 'invalid_token' | 'insufficient_scope';
  readonly description: string;
  constructor(status: 401 | 403, error: Refusal['error'], description: string) {
    this.status = status;
    this.error = error;
    this.description = description;
  }
}

const invalidToken = (description: string): Refusal => new Refusal(401, 'invalid_token', description);

interface Verifier {
  keys: ReturnType<typeof createLocalJWKSet>;
  provider: Provider;
  records: KyselyAdapter;
}

export function registerJwtUserinfo(provider: Provider, settings: UserinfoSettings): void {
  const verifier = { keys: createLocalJWKSet(settings.jwks), provider, records: issuanceRecords(settings.db) };
  const route = routeKey(settings.route);
  provider.use(async (ctx, next) => {
    const token = routeKey(ctx.path) === route && isUserinfoMethod(ctx.method) ? bearerJwt(ctx) : undefined;
    if (token === undefined) return next();
    await answer(ctx as KoaContextWithOIDC, token, verifier, settings);
  });
}

function isUserinfoMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'POST';
}

/** The bearer token of the Authorization header when it is a JWS (three parts); opaque tokens have no dot. */
function bearerJwt(ctx: { get(name: string): string }): string | undefined {
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/i.exec(ctx.get('authorization'));
  return match?.[1];
}

async function answer(
  ctx: KoaContextWithOIDC,
  token: string,
  verifier: Verifier,
  settings: UserinfoSettings,
): Promise<void> {
  ctx.set('cache-control', 'no-store');
  const origin = ctx.get('origin');
  if (origin) ctx.vary('Origin');
  const result = await claimsFor(token, verifier, settings).catch((err: unknown) => {
    if (err instanceof Refusal) return err;
    throw err;
  });
  if (result instanceof Refusal) {
    refuse(ctx, result, settings.issuer);
    // Like oidc-provider's UserInfo: an error reveals nothing, a browser client may read it.
    if (origin) ctx.set({ 'access-control-allow-origin': origin, 'access-control-expose-headers': 'WWW-Authenticate' });
    return;
  }
  // The claims only reach a browser origin the token's client registered (`--cors-origin`), as for
  // oidc-provider's UserInfo (clientBasedCORS in provider.ts).
  if (origin && (await findClient(settings.db, result.clientId))?.corsOrigins.includes(origin))
    ctx.set('access-control-allow-origin', origin);
  ctx.status = 200;
  ctx.body = result.claims;
}

function refuse(ctx: KoaContextWithOIDC, refusal: Refusal, issuer: string): void {
  const scope = refusal.error === 'insufficient_scope' ? ', scope="openid"' : '';
  ctx.status = refusal.status;
  ctx.set(
    'www-authenticate',
    `Bearer realm="${issuer}", error="${refusal.error}", error_description="${refusal.description}"${scope}`,
  );
  ctx.body = { error: refusal.error, error_description: refusal.description };
}

async function claimsFor(
  token: string,
  verifier: Verifier,
  settings: UserinfoSettings,
): Promise<{ clientId: string; claims: Partial<UserClaims> }> {
  const payload = await verifyAccessToken(token, verifier.keys, settings);
  if (!(await isStillGranted(payload, verifier)))
    throw invalidToken('the grant of the access token was revoked; sign in again');
  const scopes = new Set(typeof payload.scope === 'string' ? payload.scope.split(' ') : []);
  if (!scopes.has('openid'))
    throw new Refusal(
      403,
      'insufficient_scope',
      'the access token was granted without the openid scope; request openid to use UserInfo',
    );
  const user = await findUserClaims(settings.db, String(payload.sub));
  if (!user) throw invalidToken('the user of the access token no longer exists');
  return { clientId: String(payload.client_id), claims: releasedClaims(user, scopes) };
}

/** `sub` always; each other claim only when its scope was granted (OIDC Core §5.4). */
function releasedClaims(user: UserClaims, scopes: ReadonlySet<string>): Partial<UserClaims> {
  const names = new Set(['sub', ...[...scopes].flatMap((scope) => OIDC_SCOPE_CLAIMS[scope] ?? [])]);
  return Object.fromEntries(Object.entries(user).filter(([name]) => names.has(name)));
}

/** The checks of the API's verifier (src/http/bearer/token-verifier.ts), with the audience any of our resources. */
async function verifyAccessToken(
  token: string,
  keys: ReturnType<typeof createLocalJWKSet>,
  settings: UserinfoSettings,
): Promise<JWTPayload> {
  const { typ, claims } = decodeUnverified(token);
  if (typ?.toLowerCase() !== 'at+jwt')
    throw invalidToken(
      'the token is not an access token (RFC 9068 typ at+jwt); send the access_token, not the id_token',
    );
  if (claims.iss !== settings.issuer)
    throw invalidToken(`the access token was issued by another issuer; this server is ${settings.issuer}`);
  try {
    const { payload } = await jwtVerify(token, keys, {
      issuer: settings.issuer,
      audience: settings.resources.map((r) => r.uri),
      algorithms: [settings.algorithm],
      typ: 'at+jwt',
      requiredClaims: ['exp', 'iat', 'sub', 'client_id'],
    });
    return payload;
  } catch (err) {
    throw verificationRefusal(err, claims);
  }
}

function decodeUnverified(token: string): { typ: string | undefined; claims: JWTPayload } {
  try {
    return { typ: decodeProtectedHeader(token).typ, claims: decodeJwt(token) };
  } catch {
    throw invalidToken('the access token is not a well-formed JWT');
  }
}

function verificationRefusal(err: unknown, claims: JWTPayload): Refusal {
  if (err instanceof joseErrors.JWTExpired) {
    const at = typeof claims.exp === 'number' ? ` at ${new Date(claims.exp * 1000).toISOString()}` : '';
    return invalidToken(`the access token expired${at}; refresh it or sign in again`);
  }
  if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'aud')
    return invalidToken('the access token is not for a resource of this server');
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return invalidToken(`the access token's ${err.claim} claim is not acceptable (${err.reason})`);
  if (err instanceof joseErrors.JOSEError)
    return invalidToken("the access token's signature does not verify with this server's keys");
  throw err;
}
