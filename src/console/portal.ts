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
    session_id: portal.session.publicId,
    customer_id: portal.session.customerId ?? null,
    expires_at: portal.session.expiresAt.toISOString(),
  };
}

const ENDPOINT = 'whep_[0-9a-f]{32}';
const DELIVERY = 'dlv_[0-9a-f]{32}';

/**
 * Every API call the portal's pages make (assets/pages/portal*.js), and nothing else: least privilege, so a portal
 * session reaches no route its pages do not use, whatever its token's scopes would allow. Not on the list: the
 * event feed (`/api/events`, which a client's token reads for every order), ping, reading one endpoint, and the
 * portal links a client issues (a link's holder could otherwise hand themself a new portal, forever).
 */
export const PORTAL_API_ROUTES: ReadonlyArray<readonly [method: string, path: RegExp]> = [
  ['GET', /^\/api\/webhooks$/],
  ['POST', /^\/api\/webhooks$/],
  ['PATCH', new RegExp(`^/api/webhooks/${ENDPOINT}$`)],
  ['DELETE', new RegExp(`^/api/webhooks/${ENDPOINT}$`)],
  ['POST', new RegExp(`^/api/webhooks/${ENDPOINT}/rotate-secret$`)],
  ['POST', new RegExp(`^/api/webhooks/${ENDPOINT}/test-events$`)],
  ['POST', new RegExp(`^/api/webhooks/${ENDPOINT}/recover$`)],
  ['GET', new RegExp(`^/api/webhooks/${ENDPOINT}/deliveries$`)],
  ['GET', new RegExp(`^/api/webhooks/deliveries/${DELIVERY}$`)],
  ['POST', new RegExp(`^/api/webhooks/deliveries/${DELIVERY}/redeliver$`)],
];

/**
 * Whether a portal session may make this call. Judged on the DECODED path, the one the router matches
 * (find-my-way percent-decodes it): checking the encoded form let `/api/webhooks/%70ortal-links` through. A path
 * that does not decode is refused. This check is the whole defence at the console: a portal's token is minted
 * for and held by this proxy only (portal-sessions.ts), never shown to the browser. Behind it, the API itself
 * narrows a customer-scoped portal's token to that customer (the portal claim, http/bearer/token-verifier.ts).
 */
export function portalMayCall(method: string, target: string): boolean {
  let path: string;
  try {
    path = decodeURIComponent(target.split('?')[0]!);
  } catch {
    return false;
  }
  return PORTAL_API_ROUTES.some(([allowed, pattern]) => allowed === method && pattern.test(path));
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
  if (!portalMayCall(request.method, target))
    throw new Problem(
      'forbidden',
      `the integrator portal reaches only the calls its pages make (docs/guides/portal.md), not ${request.method} ${target.split('?')[0]}`,
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
