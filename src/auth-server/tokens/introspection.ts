// RFC 7662 introspection of our own JWT access tokens (RFC 9068), which oidc-provider 9 refuses.
//
// Why our own code: oidc-provider's introspection endpoint rejects every JWT-shaped token with
// unsupported_token_type before any hook runs (lib/shared/reject_structured_tokens.js), and it keeps no
// record of a JWT access token (the jwt format saves no payload), so neither `introspection.allowedPolicy`
// nor the resource server's `jwt` options can make it answer. Everything else stays oidc-provider's: the
// request still goes through its endpoint (body parsing, client authentication with client_secret_basic
// or client_secret_post, duplicate and missing parameters), and only its unsupported_token_type answer,
// given after the client authenticated, is replaced here by the real answer. Opaque access tokens and
// refresh tokens are introspected by oidc-provider itself.
//
// A JWT carries no grant id, so "was its grant revoked?" needs a record: every JWT access token we issue
// leaves one row (model STRUCTURED_ACCESS_TOKEN, id = its `jti`, with its grant id) through the adapter.
// Every revocation of a grant (RFC 7009 revocation of a refresh token, refresh-token reuse, code replay,
// logout) deletes all rows of that grant (oidc-adapter.ts revokeGrant), this one too.
import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Kysely } from 'kysely';
import type { AccessToken, ClientCredentials, KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { Database } from '../../db/schema.ts';
import { publicJwks, type KeyMaterial } from './keys.ts';
import { KyselyAdapter } from '../provider/oidc-adapter.ts';
import { routeKey } from '../provider/request-shaping.ts';

/** oidc_payloads.model of the issuance records; not a model of oidc-provider's own. */
const STRUCTURED_ACCESS_TOKEN = 'StructuredAccessToken';

interface IssuanceRecord {
  clientId: string;
  grantId?: string;
  accountId?: string;
}

/** The caller as oidc-provider resolved it; `resource_server` is our client metadata (clients.repository.ts). */
interface IntrospectingClient {
  clientId: string;
  clientAuthMethod: string;
  resource_server?: boolean;
}

/**
 * Who may introspect a token (docs/guides/signing-in-users.md, Introspection): a confidential client
 * (RFC 7662 §2.1 requires the caller to authenticate), for the tokens issued to it, or for any token
 * when it is registered as a resource server (`signet client create --resource-server`).
 */
export function mayIntrospect(caller: IntrospectingClient, tokenClientId: string | undefined): boolean {
  if (caller.clientAuthMethod === 'none') return false;
  return caller.resource_server === true || caller.clientId === tokenClientId;
}

/** formats.customizers.jwt: records each JWT access token as it is signed (awaited before the token is returned). */
export function recordIssuedJwt(db: Kysely<Database>) {
  const records = issuanceRecords(db);
  return async (
    _ctx: unknown,
    token: AccessToken | ClientCredentials,
    parts: { payload: JWTPayload },
  ): Promise<void> => {
    const { jti, exp } = parts.payload;
    if (typeof jti !== 'string' || typeof exp !== 'number') throw new Error('a JWT access token without jti or exp');
    const record: IssuanceRecord = {
      clientId: token.clientId!,
      grantId: 'grantId' in token ? token.grantId : undefined,
      accountId: 'accountId' in token ? token.accountId : undefined,
    };
    await records.upsert(jti, { ...record }, Math.max(1, exp - Math.floor(Date.now() / 1000)));
  };
}

interface IntrospectionSettings {
  db: Kysely<Database>;
  keys: KeyMaterial;
  issuer: string;
  accessTokenAlg: string;
}

/** Answers, in place of oidc-provider's refusal, the introspection of a JWT access token. */
export function registerJwtIntrospection(provider: Provider, settings: IntrospectionSettings): void {
  const getKey = createLocalJWKSet(publicJwks(settings.keys) as Parameters<typeof createLocalJWKSet>[0]);
  const records = issuanceRecords(settings.db);
  provider.use(async (ctx, next) => {
    await next();
    if (!isRefusedStructuredToken(ctx as KoaContextWithOIDC)) return;
    const oidc = (ctx as KoaContextWithOIDC).oidc;
    const token = String(oidc.params!.token);
    const caller = oidc.client as unknown as IntrospectingClient;
    ctx.status = 200;
    ctx.set('cache-control', 'no-store');
    ctx.body = await introspect(token, caller, { provider, getKey, records, settings });
  });
}

/**
 * oidc-provider's own answer to a JWT at its introspection endpoint: 400 unsupported_token_type, given
 * only after the client authenticated (ctx.oidc.client is set) and the parameters were checked.
 */
function isRefusedStructuredToken(ctx: KoaContextWithOIDC): boolean {
  if (ctx.method !== 'POST' || routeKey(ctx.path) !== '/introspect' || ctx.status !== 400) return false;
  const body = ctx.body as { error?: unknown } | undefined;
  return body?.error === 'unsupported_token_type' && ctx.oidc?.client !== undefined && !!ctx.oidc.params?.token;
}

interface Introspector {
  provider: Provider;
  getKey: ReturnType<typeof createLocalJWKSet>;
  records: KyselyAdapter;
  settings: IntrospectionSettings;
}

/**
 * RFC 7662 §2.2: `{"active": false}` for a token that is expired, not signed by us, whose grant is gone,
 * or that this caller may not introspect; the answer never says which (RFC 7662 §4).
 */
async function introspect(token: string, caller: IntrospectingClient, deps: Introspector): Promise<object> {
  const inactive = { active: false };
  const claims = await verifiedClaims(token, deps);
  if (!claims || !mayIntrospect(caller, claims.client_id as string)) return inactive;
  if (!(await isStillGranted(claims, deps))) return inactive;
  return {
    active: true,
    scope: claims.scope,
    client_id: claims.client_id,
    sub: claims.sub,
    aud: claims.aud,
    iss: claims.iss,
    exp: claims.exp,
    iat: claims.iat,
    jti: claims.jti,
    token_type: 'Bearer', // RFC 7662 §2.2 with RFC 6749 §7.1: how the token is presented
  };
}

/** Signed with one of our keys (retired ones included, as at the JWKS), by this issuer, unexpired. */
async function verifiedClaims(token: string, deps: Introspector): Promise<JWTPayload | undefined> {
  try {
    const { payload } = await jwtVerify(token, deps.getKey, {
      issuer: deps.settings.issuer,
      algorithms: [deps.settings.accessTokenAlg], // never `none` or HMAC (RFC 8725 §3.1)
      typ: 'at+jwt', // RFC 9068 §4: an ID token is no access token
      requiredClaims: ['exp', 'iat', 'sub', 'jti', 'client_id'],
    });
    return typeof payload.jti === 'string' && typeof payload.client_id === 'string' ? payload : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The issuance record of a verified JWT access token is still there (no revocation deleted it) and so
 * is its grant, unexpired. Introspection and UserInfo both ask this, so a revoked grant ends both at once.
 */
export async function isStillGranted(
  claims: JWTPayload,
  deps: { provider: Provider; records: KyselyAdapter },
): Promise<boolean> {
  if (typeof claims.jti !== 'string') return false;
  const record = (await deps.records.find(claims.jti)) as IssuanceRecord | undefined;
  if (!record || record.clientId !== claims.client_id) return false;
  if (record.accountId !== undefined && record.accountId !== claims.sub) return false;
  if (!record.grantId) return true; // client credentials: no grant behind the token
  const grant = await deps.provider.Grant.find(record.grantId, { ignoreExpiration: true });
  return !!grant && !grant.isExpired && grant.clientId === record.clientId && grant.accountId === record.accountId;
}

/** The store of issuance records, for isStillGranted. */
export function issuanceRecords(db: Kysely<Database>): KyselyAdapter {
  return new KyselyAdapter(db, STRUCTURED_ACCESS_TOKEN);
}
