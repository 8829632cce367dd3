// The integrator portal's side of the backend-for-frontend (docs/guides/portal.md, Integrator portal): which
// portal session a request belongs to, and the proxy for it, which reaches the webhook and event API only.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConsoleTokenError } from '../auth-server/tokens/console-tokens.ts';
import { Problem } from '../http/problems/problems.ts';
import { apiTarget, CSRF_HEADER, forwardToApi, relayResponse } from './api-forward.ts';
import { clearCookie, currentSession, requireCsrf, type ConsoleContext } from './context.ts';
import { ownsClient } from './ownership.ts';
import type { PortalSession } from './portal-sessions.ts';
import type { SessionTokens } from './session-tokens.ts';
import type { ConsoleSession } from './sessions.ts';

interface CurrentPortal {
  session: PortalSession;
  /** The owner's console session; undefined for a link's portal. */
  owner: ConsoleSession | undefined;
  /** What the browser must send back: an owner's is their console session's, a link's is the portal's own. */
  csrf: string;
}

/**
 * The live portal session of this request. An owner's portal belongs to the console session that opened it:
 * once that one ends (sign-out, expiry) the portal is over too.
 */
export async function currentPortal(
  ctx: ConsoleContext,
  request: FastifyRequest,
  now = new Date(),
): Promise<CurrentPortal | undefined> {
  const session = await ctx.portals.find(request.cookies[ctx.cookies.portal], now);
  if (!session) return undefined;
  if (session.via === 'link') return { session, owner: undefined, csrf: ctx.portals.csrfToken(session) };
  const owner = await currentSession(ctx, request, now);
  if (!owner || owner.idHash !== session.consoleSessionHash) return undefined;
  return { session, owner, csrf: ctx.store.csrfToken(owner) };
}

/** What GET /console/session tells the app about the portal it is in. */
export function portalView(portal: CurrentPortal) {
  return {
    client_id: portal.session.clientId,
    client_name: portal.session.clientName,
    via: portal.session.via,
    expires_at: portal.session.expiresAt.toISOString(),
  };
}

/**
 * The one client's webhook and event API: /api/webhooks… and /api/events…, but not the portal links a
 * client may issue (a link's holder could otherwise hand themself a new portal, forever).
 *
 * Judged on the DECODED path, the one the router matches (find-my-way percent-decodes it): checking the
 * encoded form let `/api/webhooks/%70ortal-links` through. A path that does not decode is refused. This
 * check is the whole defence: a portal's token is minted for and held by this proxy only (portal-sessions.ts),
 * never shown to the browser, so no other way leads a portal token to POST /api/webhooks/portal-links.
 */
export function portalMayCall(target: string): boolean {
  let path: string;
  try {
    path = decodeURIComponent(target.split('?')[0]!);
  } catch {
    return false;
  }
  if (path === '/api/webhooks/portal-links' || path.startsWith('/api/webhooks/portal-links/')) return false;
  return /^\/api\/(webhooks|events)(\/|$)/.test(path);
}

/**
 * /console/api/… for a portal session (its Origin already checked): forwarded with the client's token, or refused
 * (403).
 */
export async function answerAsPortal(
  app: FastifyInstance,
  ctx: ConsoleContext,
  tokens: SessionTokens,
  portal: CurrentPortal,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  requireCsrf(portal.csrf, request.headers[CSRF_HEADER]);
  const target = apiTarget(request.url);
  if (!portalMayCall(target))
    throw new Problem(
      'forbidden',
      `the integrator portal of ${portal.session.clientId} reaches the webhook and event API only (/api/webhooks, /api/events), not ${target.split('?')[0]}`,
    );
  const beforeMint = ownerStillOwns(app, tokens, portal, request);
  try {
    let response = await forwardToApi(
      app,
      request,
      await ctx.portals.accessToken(portal.session, new Date(), { beforeMint }),
    );
    // Refused although fresh (the keys rotated, the token was revoked): one new token, one more try.
    if (response.statusCode === 401) {
      const token = await ctx.portals.accessToken(portal.session, new Date(), { force: true, beforeMint });
      response = await forwardToApi(app, request, token);
    }
    return relayResponse(reply, response);
  } catch (err) {
    // The client is gone, may no longer manage webhooks, or is no longer the owner's: this portal cannot go on.
    if (!(err instanceof ConsoleTokenError)) throw err;
    await ctx.portals.remove(portal.session);
    clearCookie(ctx, reply, ctx.cookies.portal);
    throw new Problem('unauthorized', `the portal session has ended: ${err.message}`);
  }
}

/** An owner's portal gets a new client token only while its user still owns the client (ownership.ts). */
function ownerStillOwns(
  app: FastifyInstance,
  tokens: SessionTokens,
  portal: CurrentPortal,
  request: FastifyRequest,
): (() => Promise<void>) | undefined {
  const owner = portal.owner;
  if (!owner) return undefined;
  return async () => {
    const clientId = portal.session.clientId;
    if (!(await ownsClient(app, tokens, { session: owner, host: request.headers.host }, clientId)))
      throw new ConsoleTokenError(`you no longer own the client ${clientId}`);
  };
}

/**
 * Sign-out in the portal: the portal session ends. Returns the portal that ended (its `via` tells the caller
 * whether a console session must end too), or undefined when the request had none.
 */
export async function endPortal(
  ctx: ConsoleContext,
  request: FastifyRequest,
  reply: FastifyReply,
  csrf: string | undefined,
): Promise<CurrentPortal | undefined> {
  const portal = await currentPortal(ctx, request);
  if (portal) {
    requireCsrf(portal.csrf, csrf, 'form');
    await ctx.portals.remove(portal.session);
  }
  if (request.cookies[ctx.cookies.portal] !== undefined) clearCookie(ctx, reply, ctx.cookies.portal);
  return portal;
}
