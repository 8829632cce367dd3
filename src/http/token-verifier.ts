// Access-token verification for the resource server (RFC 9068 JWT profile, RFC 8725 best practices),
// with a bounded cache of verified tokens so an authenticated read costs close to an unauthenticated one.
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { Problem } from './problems.ts';

export interface Principal {
  subject: string;
  clientId: string | undefined;
  scopes: ReadonlySet<string>;
  /** Client-credentials token: no end user behind it (RFC 9068 §2.2: `sub` is then the client's own id). */
  isClient: boolean;
  /** Stable key for per-caller state (rate limits, idempotency keys). */
  callerKey: string;
}

export interface VerifierSettings {
  issuer: string;
  audience: string;
  algorithms: string[];
  clockToleranceSeconds: number;
  cacheSize: number;
  jwksFile: string | undefined;
  jwksUrl: string | undefined;
  /** The built-in authorization server's published keys, read in process instead of over HTTP. */
  localJwks?: () => JSONWebKeySet;
}

export interface TokenVerifier {
  /** The verified principal when this exact token is cached and unexpired (synchronous fast path). */
  cached(token: string): Principal | undefined;
  verify(token: string): Promise<Principal>;
}

interface CacheEntry {
  principal: Principal;
  expiresAtMs: number;
}

export function createTokenVerifier(settings: VerifierSettings): TokenVerifier {
  const getKey = keyResolver(settings);
  const cache = new Map<string, CacheEntry>();
  const cached = (token: string): Principal | undefined => {
    const hit = cache.get(token);
    if (hit && Date.now() < hit.expiresAtMs) return hit.principal;
    if (hit) cache.delete(token);
    return undefined;
  };
  const verifyToken = async (token: string): Promise<Principal> => {
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
  return { cached, verify: verifyToken };
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
    return payload;
  } catch (err) {
    throw toProblem(err);
  }
}

function toProblem(err: unknown): Problem {
  if (err instanceof joseErrors.JWKSTimeout || (err instanceof Error && /fetch|ECONNREFUSED|ENOTFOUND|issuer discovery/i.test(err.message) && !(err instanceof joseErrors.JOSEError))) {
    return new Problem('issuerUnavailable', 'the signing keys of the token issuer could not be fetched; try again shortly', { headers: { 'retry-after': '5' } });
  }
  if (err instanceof joseErrors.JWTExpired) return invalidToken('the access token has expired');
  if (err instanceof joseErrors.JWTClaimValidationFailed) return invalidToken(`the "${err.claim}" claim is not acceptable`);
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return invalidToken('the token is signed with an algorithm that is not allowed');
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
  return { subject, clientId, scopes, isClient, callerKey: isClient ? `client:${clientId}` : `user:${subject}` };
}

function keyResolver(settings: VerifierSettings): JWTVerifyGetKey {
  const { localJwks } = settings;
  if (localJwks && !settings.jwksFile && !settings.jwksUrl) {
    // Rebuilt only when the key set object changes (a rotation), not per token.
    let source: JSONWebKeySet | undefined;
    let resolver: JWTVerifyGetKey | undefined;
    return (header, token) => {
      const current = localJwks();
      if (current !== source || !resolver) {
        source = current;
        resolver = createLocalJWKSet(current);
      }
      return resolver(header, token);
    };
  }
  if (settings.jwksFile) return createLocalJWKSet(JSON.parse(readFileSync(settings.jwksFile, 'utf8')));
  if (settings.jwksUrl) return createRemoteJWKSet(new URL(settings.jwksUrl));
  let remote: JWTVerifyGetKey | undefined;
  return async (header, token) => {
    remote ??= createRemoteJWKSet(new URL(await discoverJwksUri(settings.issuer)));
    return remote(header, token);
  };
}

/** OpenID Connect Discovery 1.0 §4, falling back to RFC 8414 metadata. */
async function discoverJwksUri(issuer: string): Promise<string> {
  const candidates = [`${issuer}/.well-known/openid-configuration`, authorizationServerMetadataUrl(issuer)];
  for (const url of candidates) {
    const response = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    if (!response?.ok) continue;
    const metadata = (await response.json()) as { issuer?: string; jwks_uri?: string };
    if (metadata.issuer === issuer && typeof metadata.jwks_uri === 'string') return metadata.jwks_uri;
  }
  throw new Error(`issuer discovery failed for ${issuer}`);
}

/** RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path. */
function authorizationServerMetadataUrl(issuer: string): string {
  const url = new URL(issuer);
  return `${url.origin}/.well-known/oauth-authorization-server${url.pathname === '/' ? '' : url.pathname}`;
}
