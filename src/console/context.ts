// What the console's routes share: the session store, where the authorization server is, the cookies.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CookieSerializeOptions } from '@fastify/cookie';
import { Problem } from '../http/problems/problems.ts';
import { CSRF_HEADER } from './api-forward.ts';
import type { OAuthEndpoints } from './oauth.ts';
import type { PortalStore, PortalTokens } from './portal-sessions.ts';
import { safeEqual, type ConsoleSession, type SessionStore } from './sessions.ts';

export interface ConsoleContext {
  store: SessionStore;
  oauth: OAuthEndpoints;
  /** The issuer's origin (`http://127.0.0.1:3000`): the console's own. */
  origin: string;
  scopes: readonly string[];
  /** CONSOLE_IDLE_TIMEOUT_SECONDS: sessions end unused this long; sign-in asks for a password entered within it. */
  idleTimeoutSeconds: number;
  cookies: { session: string; login: string; portal: string; options: CookieSerializeOptions };
  /** The integrator portal's sessions (portal-sessions.ts) and the client tokens they hold. */
  portals: PortalStore;
  tokens: PortalTokens;
}

/**
 * `__Host-` (RFC 6265bis §4.1.3.2) pins the cookie to this host, Secure, Path=/. A browser sets no Secure
 * cookie over plain http, so on loopback over http (development) the cookie drops the prefix and Secure.
 */
export function cookieSettings(origin: string): ConsoleContext['cookies'] {
  const url = new URL(origin);
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  const secure = !(url.protocol === 'http:' && loopback);
  const prefix = secure ? '__Host-' : '';
  return {
    session: `${prefix}signet-console`,
    login: `${prefix}signet-console-login`,
    portal: `${prefix}signet-console-portal`,
    options: { httpOnly: true, secure, sameSite: 'strict', path: '/' },
  };
}

export async function currentSession(
  ctx: ConsoleContext,
  request: FastifyRequest,
  now = new Date(),
): Promise<ConsoleSession | undefined> {
  return ctx.store.find(request.cookies[ctx.cookies.session], now);
}

export function clearCookie(ctx: ConsoleContext, reply: FastifyReply, name: string): void {
  reply.clearCookie(name, ctx.cookies.options);
}

/**
 * The roles the console shows, as the granted scopes prove them: admin:write needs the admin role, admin:read
 * alone the auditor role (docs/security.md, "Roles").
 */
export function rolesOf(scope: string): string[] {
  const scopes = scope.split(' ');
  if (scopes.includes('admin:write')) return ['admin'];
  return scopes.includes('admin:read') ? ['auditor'] : [];
}

/**
 * The CSRF check of every state-changing console request: `presented` (the header, or the sign-out form's
 * field) must equal the token the session issued, compared in constant time.
 */
export function requireCsrf(expected: string, presented: unknown, where: 'header' | 'form' = 'header'): void {
  if (typeof presented === 'string' && safeEqual(presented, expected)) return;
  throw new Problem(
    'forbidden',
    where === 'form'
      ? 'the sign-out form lacks the console’s CSRF token: reload the console'
      : `the ${CSRF_HEADER} header must carry the csrf_token of /console/session`,
  );
}

const RETURN_BASE = 'http://return-to.invalid';

/**
 * A page path under /console to come back to after sign-in; anything else is /console (no open redirect).
 * Never a portal link: signing in must not open (or show the token of) a portal as a side effect. The
 * value is resolved as a browser will resolve it (WHATWG URL: dot segments removed, `%2e` counted as a
 * dot) before it is checked, so `/console/x/../portal-links/…` and `/console/../oauth/…` are refused;
 * what is kept is the normalised path and query.
 */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== 'string' || !/^\/console(\/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$/.test(value)) return '/console';
  if (value.includes('//') || value.includes('\\')) return '/console';
  let url: URL;
  let path: string;
  try {
    url = new URL(value, RETURN_BASE);
    path = decodeURIComponent(url.pathname);
  } catch {
    return '/console';
  }
  if (url.origin !== RETURN_BASE || !(url.pathname === '/console' || url.pathname.startsWith('/console/')))
    return '/console';
  // Encoded slashes or dots (`%2F..`) that a later reader might still take for segments: refused too.
  const segments = path.split('/');
  if (segments.includes('..') || segments.includes('.') || path.includes('//') || path.includes('\\'))
    return '/console';
  if (path === '/console/portal-links' || path.startsWith('/console/portal-links/')) return '/console';
  return `${url.pathname}${url.search}`;
}
