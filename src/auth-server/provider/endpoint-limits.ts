// Rate limits of the endpoints where a caller proves who it is (docs/security.md, "Rate limits"): /token and
// /introspect (client authentication, RFC 6749 §2.3) and /reg (an initial or registration access token,
// RFC 7591 §3, RFC 7592 §3). Each request is counted per address and per caller: the client_id it names
// (HTTP Basic or the form's client_id), or the token it presents (by a prefix of its SHA-256, never the
// value). A failed answer counts much more strictly than a success (attempt-limit.ts), so
// guessing a client secret or a registration token stops after a few tries, while a busy client is not
// slowed. Refusals are 429 with Retry-After (RFC 6585 §4) in the endpoint's own error shape (RFC 6749 §5.2):
// `temporarily_unavailable`, as the service answers an outage there (response-shaping.ts), since RFC 6749
// registers no code of its own for it and the status and Retry-After are what clients act on.
import type { KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { AttemptLimiter, AttemptVerdict } from '../../http/rate-limit/attempt-limit.ts';
import { hashTokenId } from './oidc-adapter.ts';
import { basicClientId, readFormOnce, routeKey } from './request-shaping.ts';

export type EndpointLimiter = Pick<AttemptLimiter, 'admit' | 'fail'>;

export interface LimitedRoutes {
  token: string;
  introspection: string;
  /** Its RFC 7592 client configuration endpoints below it (`/reg/{client_id}`) too. */
  registration: string;
}

export function registerEndpointLimits(provider: Provider, limiter: EndpointLimiter, routes: LimitedRoutes): void {
  const forms = new Set([routeKey(routes.token), routeKey(routes.introspection)]);
  const registration = routeKey(routes.registration);
  provider.use(async (ctx, next) => {
    const route = routeKey(ctx.path);
    const isRegistration = route === registration || route.startsWith(`${registration}/`);
    if (ctx.method === 'OPTIONS' || !(isRegistration || (ctx.method === 'POST' && forms.has(route)))) return next();
    const oidcCtx = ctx as KoaContextWithOIDC;
    const caller = isRegistration ? bearerKey(oidcCtx) : await clientKey(oidcCtx);
    const address = `ip:${ctx.ip}`;
    const keys = caller ? [address, caller] : [address];
    const verdict = await limiter.admit(keys);
    if (!verdict.allowed) return answerLimited(oidcCtx, verdict);
    await next();
    // A failed authentication (401: a wrong secret, an unknown token) counts against the address and the
    // caller; any other refusal (an expired code, a bad scope) only against the address, so a client's
    // own mistakes, or a shared client's (the console's) users, never lock that client out.
    if (ctx.status === 401) await limiter.fail(keys);
    else if (ctx.status >= 400 && ctx.status < 500 && ctx.status !== 429) await limiter.fail([address]);
  });
}

/** The client a token or introspection request names: HTTP Basic, else the form's client_id. */
async function clientKey(ctx: KoaContextWithOIDC): Promise<string | undefined> {
  const basic = basicClientId(ctx.get('authorization'));
  if (basic) return `client:${basic}`;
  if (!ctx.is('application/x-www-form-urlencoded')) return undefined;
  const raw = await readFormOnce(ctx);
  const clientId = raw && new URLSearchParams(raw.toString('utf8')).get('client_id');
  return clientId ? `client:${clientId}` : undefined;
}

/** The bearer token at /reg: an initial access token, or a client's registration access token (RFC 7592). */
function bearerKey(ctx: KoaContextWithOIDC): string | undefined {
  const match = /^Bearer ([\x21-\x7E]+)$/i.exec(ctx.get('authorization'));
  return match?.[1] ? `bearer:${hashTokenId(match[1]).slice(0, 22)}` : undefined;
}

function answerLimited(ctx: KoaContextWithOIDC, verdict: Exclude<AttemptVerdict, { allowed: true }>): void {
  const seconds = verdict.retryAfterSeconds;
  const what = verdict.limit === 'failures' ? 'failed requests' : 'requests';
  ctx.status = 429;
  ctx.set('retry-after', String(seconds));
  ctx.set('cache-control', 'no-store');
  ctx.set('ratelimit', `"oauth-${verdict.limit}";r=0;t=${seconds}`);
  ctx.body = {
    error: 'temporarily_unavailable',
    error_description: `too many ${what} (${verdict.quota}) from this address or client; retry in ${seconds} s`,
  };
}
