// The settings of dynamic registration's policy and of the authorization server's endpoint rate limits
// (docs/reference/configuration.md: REGISTRATION_*, OAUTH_RATE_LIMIT_*), part of SETTINGS (settings.ts).
// docs/security.md, "Registration" and "Rate limits", says why each default is what it is.
import { parsers } from './parsers.ts';
import { setting } from './setting.ts';

/** RFC 6749 §3.3 scope-token: printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const GRANTS = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
/** A DNS name or IPv4 address, lower case; `*.` before a name also matches every name below it. */
const HOST = /^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$/;

const words = (raw: string): string[] => raw.split(/[\s,]+/).filter(Boolean);

function scopeList(raw: string): string[] {
  const scopes = words(raw);
  for (const scope of scopes) if (!SCOPE_TOKEN.test(scope)) throw new Error(`"${scope}" is not a scope`);
  return scopes;
}

function grantList(raw: string): (typeof GRANTS)[number][] {
  const grants = words(raw);
  for (const grant of grants)
    if (!(GRANTS as readonly string[]).includes(grant))
      throw new Error(`"${grant}" is not one of ${GRANTS.join(', ')}`);
  return grants as (typeof GRANTS)[number][];
}

function hostList(raw: string): string[] {
  const hosts = words(raw).map((host) => host.toLowerCase());
  for (const host of hosts)
    if (!HOST.test(host)) throw new Error(`"${host}" is not a host name (app.example.com, *.example.com, [::1])`);
  return hosts;
}

export const REGISTRATION_SETTINGS = [
  setting({
    key: 'registrationScopes',
    env: 'REGISTRATION_SCOPES',
    default: undefined,
    doc: 'Registration policy: the API scopes a self-registered client may have (space or comma list); a registration token may allow only these. Admin scopes are never allowed (startup fails). Unset: every API scope but the admin ones.',
    parse: scopeList,
  }),
  setting({
    key: 'registrationGrantTypes',
    env: 'REGISTRATION_GRANT_TYPES',
    default: 'authorization_code,refresh_token',
    doc: 'Registration policy: the grant types a self-registered client may have (`authorization_code`, `refresh_token`, `client_credentials`).',
    parse: grantList,
  }),
  setting({
    key: 'registrationRedirectHosts',
    env: 'REGISTRATION_REDIRECT_HOSTS',
    default: undefined,
    doc: 'Registration policy: the hosts a self-registered client’s redirect and post-logout URIs may name (`app.example.com`, `*.example.com` for the names below it, `127.0.0.1`). Unset: any host the client rules allow (https, or http on loopback). Set it in production.',
    parse: hostList,
  }),
  setting({
    key: 'oauthRateLimitMax',
    env: 'OAUTH_RATE_LIMIT_MAX',
    default: '600',
    doc: 'Requests per window to `/oauth/token`, `/oauth/introspect` and `/oauth/reg`, counted per client address and per client (or registration token); 429 with `Retry-After` above.',
    parse: parsers.integer(1, 1_000_000),
  }),
  setting({
    key: 'oauthRateLimitFailures',
    env: 'OAUTH_RATE_LIMIT_FAILURES',
    default: '20',
    doc: 'Failed requests per window to the same endpoints, per address (any 4xx answer) and per client (a failed authentication: a wrong secret, an unknown or used registration token); past it every request of that address or client is refused with 429 until the window ends.',
    parse: parsers.integer(1, 1_000_000),
  }),
  setting({
    key: 'oauthRateLimitWindowMs',
    env: 'OAUTH_RATE_LIMIT_WINDOW',
    default: '1m',
    doc: 'The window of `OAUTH_RATE_LIMIT_MAX` and `OAUTH_RATE_LIMIT_FAILURES` (1s–1h).',
    parse: parsers.duration(1000, 3_600_000),
  }),
] as const;
