// Bearer-token authentication (RFC 6750) and scope checks for /api routes.
// The token is resolved once per request in the route's onRequest hook (route-guard.ts, so the rate
// limiter can key on the caller) with the keys at hand; a token that needs the issuer's keys fetched
// first (none loaded yet, or an unknown `kid`) is verified in preParsing instead, after the rate limiter
// has counted the request by client address: traffic cannot turn into outbound fetches before being
// limited. Each route states the scope it needs in `config.scope`, enforced in preParsing too (before
// the body), for every route: a scoped route the guard did not see gets 401, never a pass. Before the
// scope, a user's token is held against how the user stands now (account-check.ts): their current roles
// and disabled state, not only those the token was issued under.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Problem } from '../problems/problems.ts';
import { checkAccount, type AccountCheck } from './account-check.ts';
import type { Principal, TokenVerifier } from './token-verifier.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    authFailure: Problem | null;
    /** A token left for preParsing, when verifying it needs a fetch of the issuer's keys. */
    deferredToken: string | null;
  }
  interface FastifyContextConfig {
    /** Scope the route requires; routes without it are public. */
    scope?: string;
  }
}

const REALM = 'signet';

export function decorateAuth(app: FastifyInstance): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('authFailure', null);
  app.decorateRequest('deferredToken', null);
}

/**
 * Resolves the caller when that needs no wait (no credentials, a malformed header, a cached token) and
 * returns null; else returns the token, for authenticateAtHand.
 */
export function authenticateNow(request: FastifyRequest, verifier: TokenVerifier): string | null {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  // The common case first: `Bearer <token>` with a token verified before. Only a token that passed
  // bearerToken's grammar is ever cached, so a hit needs no second look at the header's syntax.
  if (header.startsWith('Bearer ') && !hasSeveralAuthorizationLines(request.raw)) {
    const hit = verifier.cached(header.slice(7));
    if (hit) {
      request.principal = hit;
      return null;
    }
  }
  const token = bearerToken(request);
  if (token === null) return null;
  const hit = verifier.cached(token);
  if (!hit) return token;
  request.principal = hit;
  return null;
}

/** Verifies with the keys at hand; a token whose key must be fetched is left for preParsing. */
export function authenticateAtHand(request: FastifyRequest, verifier: TokenVerifier, token: string): Promise<void> {
  return verifier.verifyAtHand(token).then(
    (principal) => {
      if (principal) request.principal = principal;
      else request.deferredToken = token;
    },
    (err: unknown) => {
      if (!(err instanceof Problem)) throw err;
      request.authFailure = err;
    },
  );
}

/**
 * One preParsing hook, after every onRequest hook (so after the rate limiter): verifies a token left
 * for later (fetching the issuer's keys), then checks the route's scope, before the body is read and
 * validated: a caller without a valid token learns 401/403, not 400/415/422 about a body it may not send.
 */
export function registerScopeCheck(
  app: FastifyInstance,
  verifier: TokenVerifier,
  options: { resourceMetadataUrl: string; accountCheck?: AccountCheck },
): void {
  const check = (request: FastifyRequest): Problem | undefined => {
    const scope = request.routeOptions.config.scope;
    const failure = scope ? scopeFailure(request, scope) : undefined;
    return failure && withResourceMetadata(failure, options.resourceMetadataUrl);
  };
  // The user's current roles and disabled state (account-check.ts), then the route's scope.
  const decide = (request: FastifyRequest, finish: (failure: Error | null) => void): void =>
    checkAccount(request, options.accountCheck, (err) => finish(err ?? check(request) ?? null));
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const token = request.deferredToken;
    if (token === null) return decide(request, (failure) => done(failure, payload));
    request.deferredToken = null;
    verifier.verify(token).then(
      (principal) => {
        request.principal = principal;
        decide(request, (failure) => done(failure, payload));
      },
      (err: unknown) => {
        if (!(err instanceof Problem)) return done(err as Error);
        request.authFailure = err;
        done(check(request) ?? null, payload);
      },
    );
  });
}

/** RFC 9728 §5.1: Bearer challenges name the resource's metadata, so a client can find its issuer. */
function withResourceMetadata(problem: Problem, url: string): Problem {
  const headers = problem.options.headers;
  const challenge = headers?.['www-authenticate'];
  if (headers && challenge?.startsWith('Bearer') && !challenge.includes('resource_metadata=')) {
    headers['www-authenticate'] = `${challenge}, resource_metadata="${url}"`;
  }
  return problem;
}

function scopeFailure(request: FastifyRequest, scope: string): Problem | undefined {
  if (request.authFailure) return request.authFailure;
  if (!request.principal) {
    // RFC 6750 §3.1: no error code when the request carried no credentials at all.
    return new Problem('unauthorized', 'send an access token: Authorization: Bearer <token>', {
      headers: { 'www-authenticate': `Bearer realm="${REALM}"` },
    });
  }
  if (!request.principal.scopes.has(scope)) {
    return new Problem('insufficientScope', `this request needs the "${scope}" scope`, {
      headers: { 'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${scope}"` },
      extensions: { requiredScope: scope },
    });
  }
  return undefined;
}

/**
 * RFC 9110 §11.6.2: Authorization carries one set of credentials, and §5.3 allows several lines of a
 * field only for a list. Node keeps the first Authorization line in `headers` and drops the others, so
 * two lines would be decided on one while something in front of us may have checked the other: the
 * request is refused instead. Counted in rawHeaders, like the Host lines (malformed.ts).
 */
export function hasSeveralAuthorizationLines(raw: IncomingMessage): boolean {
  let lines = 0;
  for (let i = 0; i < raw.rawHeaders.length; i += 2) {
    const name = raw.rawHeaders[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization' && ++lines > 1) return true;
  }
  return false;
}

export const SEVERAL_AUTHORIZATION_LINES =
  'the request has more than one Authorization header field; send one credential';

/** Returns the token, null when no Bearer credentials were sent; sets authFailure on a malformed header. */
function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  if (hasSeveralAuthorizationLines(request.raw)) {
    // RFC 6750 §3.1: invalid_request covers a request that repeats a parameter.
    request.authFailure = new Problem('badRequest', SEVERAL_AUTHORIZATION_LINES, {
      headers: { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_request"` },
    });
    return null;
  }
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (match) return match[1] ?? null;
  if (/^Bearer\b/i.test(header)) {
    request.authFailure = new Problem(
      'badRequest',
      'the Authorization header is not a well-formed Bearer credential (RFC 6750 §2.1)',
      {
        headers: { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_request"` },
      },
    );
  }
  return null;
}

/** The caller an Idempotency-Key (and a rate-limit counter) belongs to: the token's principal, else the address. */
export function callerKeyOf(request: FastifyRequest): string {
  return request.principal?.callerKey ?? `ip:${request.clientOrigin.ip}`;
}
