// Access-token verification for the resource server (RFC 9068 JWT profile, RFC 8725 best practices),
// with a bounded cache of verified tokens so an authenticated read costs close to an unauthenticated one.
// Keys fetched over HTTP come from issuer-keys.ts, which bounds the fetching; a token whose key is not
// at hand is verified in two steps, so that its request is rate-limited before any fetch (auth.ts).
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../config/config.ts';
import {
  createLocalJWKSet,
  errors as joseErrors,
  jwtVerify,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { IssuerUnavailable, KeysNotAtHand, RemoteKeySet, type RemoteKeySettings } from './issuer-keys.ts';
import { Problem } from '../problems/problems.ts';

export interface Principal {
  subject: string;
  clientId: string | undefined;
  scopes: ReadonlySet<string>;
  /** Client-credentials token: no end user behind it (RFC 9068 §2.2: `sub` is then the client's own id). */
  isClient: boolean;
  /** Stable key for per-caller state (rate limits, idempotency keys). */
  callerKey: string;
  /** The console's integrator portal acting as the client (the PORTAL_CLAIM claim); absent for any other token. */
  portal?: PortalClaim;
}

/**
 * A private claim (RFC 7519 §4.3) of the tokens Signet mints for its integrator portal
 * (auth-server/tokens/console-tokens.ts, docs/guides/portal.md): the portal session acting, the link that opened
 * it, and the customer it is limited to. It only narrows what the client's token may do (and names the session in
 * the audit trail); a token without it is the client's own.
 */
export const PORTAL_CLAIM = 'signet_portal';

export interface PortalClaim {
  sessionId: string;
  linkId?: string;
  customerId?: string;
}

interface VerifierSettings {
  issuer: string;
  audience: string;
  algorithms: string[];
  clockToleranceSeconds: number;
  cacheSize: number;
  jwksFile: string | undefined;
  jwksUrl: string | undefined;
  /** The built-in authorization server's published keys, read in process instead of over HTTP. */
  localJwks?: () => JSONWebKeySet;
  /** Rereads them when a token of `issuer` names a key they lack (another instance loaded a rotation first). */
  localJwksReload?: LocalKeyReload;
  /** Limits and log hook for keys fetched over HTTP (defaults in issuer-keys.ts). */
  remoteKeys?: Omit<RemoteKeySettings, 'issuer' | 'jwksUrl'>;
}

export interface TokenVerifier {
  /** The verified principal when this exact token is cached and unexpired (synchronous fast path). */
  cached(token: string): Principal | undefined;
  /** Verifies with the keys already held; undefined when only fetching the issuer's keys can tell. Never fetches. */
  verifyAtHand(token: string): Promise<Principal | undefined>;
  /** Verifies, fetching the issuer's keys when needed: call it only for a request the rate limiter has counted. */
  verify(token: string): Promise<Principal>;
}

/** Rate limited and shared by its owner (auth-server/provider/provider-holder.ts `unknownKey`). */
export interface LocalKeyReload {
  /** Whether a reload would run (or is running) now; false within its cooldown. */
  allowed(): boolean;
  reload(): Promise<void>;
}

interface KeyResolver {
  atHand: JWTVerifyGetKey;
  resolve: JWTVerifyGetKey;
}

interface CacheEntry {
  principal: Principal;
  expiresAtMs: number;
}

export function createTokenVerifier(settings: VerifierSettings): TokenVerifier {
  const keys = keyResolver(settings);
  const cache = new Map<string, CacheEntry>();
  const cached = (token: string): Principal | undefined => {
    const hit = cache.get(token);
    if (hit && Date.now() < hit.expiresAtMs) return hit.principal;
    if (hit) cache.delete(token);
    return undefined;
  };
  const verifyToken = async (token: string, getKey: JWTVerifyGetKey): Promise<Principal> => {
    const hit = cached(token);
    if (hit) return hit;
    const payload = await verify(token, getKey, settings);
    const principal = toPrincipal(payload);
    if (settings.cacheSize > 0 && typeof payload.exp === 'number') {
      // Bounded: drop the oldest entry (Map keeps insertion order). Never kept past the token's own exp.
      if (cache.size >= settings.cacheSize) cache.delete(cache.keys().next().value as string);
      cache.set(token, { principal, expiresAtMs: payload.exp * 1000 });
    }
    return principal;
  };
  return {
    cached,
    verifyAtHand: (token) =>
      verifyToken(token, keys.atHand).catch((err: unknown) => {
        if (err instanceof KeysNotAtHand) return undefined;
        throw err;
      }),
    verify: (token) => verifyToken(token, keys.resolve),
  };
}

async function verify(token: string, getKey: JWTVerifyGetKey, settings: VerifierSettings): Promise<JWTPayload> {
  try {
    const { payload } = await jwtVerify(token, getKey, {
      issuer: settings.issuer,
      audience: settings.audience,
      algorithms: settings.algorithms, // allow-list: never `none`, never HMAC (RFC 8725 §3.1)
      typ: 'at+jwt', // RFC 9068 §4: reject ID tokens and other JWTs presented as access tokens
      clockTolerance: settings.clockToleranceSeconds,
      requiredClaims: ['exp', 'iat', 'sub'], // RFC 9068 §2.2
    });
    // jose checks `iat` only against maxTokenAge; a token issued in the future (beyond the clock
    // tolerance) comes from a wrong clock or a forger (RFC 7519 §4.1.6).
    if ((payload.iat as number) > Date.now() / 1000 + settings.clockToleranceSeconds)
      throw invalidToken('the "iat" claim is in the future');
    return payload;
  } catch (err) {
    throw err instanceof KeysNotAtHand ? err : toProblem(err);
  }
}

function toProblem(err: unknown): Problem {
  if (err instanceof Problem) return err;
  if (err instanceof IssuerUnavailable) {
    return new Problem(
      'issuerUnavailable',
      'the signing keys of the token issuer could not be fetched; try again shortly',
      { headers: { 'retry-after': String(err.retryAfterSeconds) } },
    );
  }
  if (err instanceof joseErrors.JWTExpired) return invalidToken('the access token has expired');
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return invalidToken(`the "${err.claim}" claim is not acceptable`);
  if (err instanceof joseErrors.JOSEAlgNotAllowed)
    return invalidToken('the token is signed with an algorithm that is not allowed');
  if (err instanceof joseErrors.JWKSNoMatchingKey) return invalidToken('no published key matches the token');
  return invalidToken('the access token could not be verified');
}

export function invalidToken(description: string): Problem {
  // RFC 6750 §3: error_description excludes `"` and `\` (and non-ASCII); the problem body keeps the original.
  const headerSafe = description.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?');
  return new Problem('invalidToken', description, {
    headers: { 'www-authenticate': `Bearer realm="signet", error="invalid_token", error_description="${headerSafe}"` },
  });
}

function toPrincipal(payload: JWTPayload): Principal {
  const clientId = typeof payload.client_id === 'string' ? payload.client_id : undefined;
  // `sub` is a required claim (checked by jwtVerify); it must also be a string.
  const subject = payload.sub;
  if (typeof subject !== 'string' || subject === '') throw invalidToken('the "sub" claim is not acceptable');
  const scopes = new Set(typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : []);
  const isClient = clientId !== undefined && subject === clientId;
  const principal: Principal = {
    subject,
    clientId,
    scopes,
    isClient,
    callerKey: isClient ? `client:${clientId}` : `user:${subject}`,
  };
  if (payload[PORTAL_CLAIM] !== undefined) principal.portal = portalClaim(payload[PORTAL_CLAIM]);
  return principal;
}

/** A malformed portal claim refuses the token: read loosely, it could widen what a narrowed token may do. */
function portalClaim(value: unknown): PortalClaim {
  const claim = (value ?? {}) as Record<string, unknown>;
  const text = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= 128;
  const optional = (v: unknown) => v === undefined || text(v);
  if (typeof value !== 'object' || !text(claim.session_id) || !optional(claim.link_id) || !optional(claim.customer_id))
    throw invalidToken(`the "${PORTAL_CLAIM}" claim is not acceptable`);
  return {
    sessionId: claim.session_id as string,
    ...(claim.link_id !== undefined && { linkId: claim.link_id as string }),
    ...(claim.customer_id !== undefined && { customerId: claim.customer_id as string }),
  };
}

function keyResolver(settings: VerifierSettings): KeyResolver {
  const { localJwks } = settings;
  if (localJwks && !settings.jwksFile && !settings.jwksUrl)
    return inProcessKeys(localJwks, settings.localJwksReload, settings.issuer);
  if (settings.jwksFile) {
    const fromFile = createLocalJWKSet(readJwksFile(settings.jwksFile));
    return { atHand: fromFile, resolve: fromFile };
  }
  const remote = new RemoteKeySet({ ...settings.remoteKeys, issuer: settings.issuer, jwksUrl: settings.jwksUrl });
  return { atHand: remote.atHand, resolve: remote.resolve };
}

/**
 * The built-in server's keys, rebuilt only when the key set object changes (a reload), not per token. A
 * token of our issuer whose `kid` is not among them may have been signed by an instance that loaded a
 * rotation before this one did: the keys are reread once (within the reload's rate limit) before the
 * token is refused. In two steps like fetched keys: atHand never reads, resolve does (auth.ts counts the
 * request first).
 */
function inProcessKeys(
  localJwks: () => JSONWebKeySet,
  reload: LocalKeyReload | undefined,
  issuer: string,
): KeyResolver {
  let source: JSONWebKeySet | undefined;
  let resolver: JWTVerifyGetKey | undefined;
  const lookup: JWTVerifyGetKey = (header, token) => {
    const current = localJwks();
    if (current !== source || !resolver) {
      source = current;
      resolver = createLocalJWKSet(current);
    }
    return resolver(header, token);
  };
  const mayReload = (err: unknown, token: FlattenedJWSInput): boolean =>
    err instanceof joseErrors.JWKSNoMatchingKey && reload !== undefined && reload.allowed() && issuedBy(token, issuer);
  return {
    atHand: async (header, token) => {
      try {
        return await lookup(header, token);
      } catch (err) {
        throw mayReload(err, token) ? new KeysNotAtHand() : err;
      }
    },
    resolve: async (header, token) => {
      try {
        return await lookup(header, token);
      } catch (err) {
        if (!mayReload(err, token)) throw err;
        await reload!.reload();
        return lookup(header, token);
      }
    },
  };
}

/** The unverified `iss` (RFC 7519 §4.1.1): only tokens claiming our issuer may cost a reload. */
function issuedBy(token: FlattenedJWSInput, issuer: string): boolean {
  try {
    const payload = typeof token.payload === 'string' ? Buffer.from(token.payload, 'base64url') : token.payload;
    return (JSON.parse(Buffer.from(payload).toString('utf8')) as { iss?: unknown }).iss === issuer;
  } catch {
    return false;
  }
}

/** AUTH_JWKS_FILE's key set; a file that cannot be read or is no JWK set refuses the start with one line naming it. */
function readJwksFile(path: string): JSONWebKeySet {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as JSONWebKeySet;
    if (!Array.isArray(parsed?.keys)) throw new Error('no "keys" array');
    return parsed;
  } catch (err) {
    throw new ConfigError(`AUTH_JWKS_FILE: ${path}: ${(err as Error).message}`);
  }
}
