// The ways into the integrator portal (docs/guides/portal.md, Integrator portal):
// - GET /console/portal-links/:token: a one-time link (POST /api/webhooks/portal-links) shows a page that
//   names the client and asks to open the portal; nothing is used yet (link scanners, cross-site GETs);
// - POST /console/portal-links/:token: the page's form (same origin) uses the link, opens a portal session
//   for its client, and sends the browser on (303) so the token leaves the address bar;
// - POST /console/portal-sessions: a signed-in user opens the portal of a client they own, as the public
//   API says (GET /api/me/clients, with the user's own token);
// - DELETE /console/portal-sessions: leaves the portal (an owner goes back to the console).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/executor.ts';
import { Problem } from '../http/problems/problems.ts';
import { consumePortalLink, portalLinkState } from '../webhooks/api/portal-links.service.ts';
import { checkOrigin } from './auth.routes.ts';
import { clearCookie, currentSession, requireCsrf, type ConsoleContext } from './context.ts';
import { messagePage, portalConfirmPage, sendHtml } from './pages.ts';
import { CSRF_HEADER } from './api-forward.ts';
import { ownsClient } from './ownership.ts';
import { currentPortal } from './portal.ts';
import { newPortalSessionId, PORTAL_SCOPES, type OpenPortal } from './portal-sessions.ts';
import type { SessionTokens } from './session-tokens.ts';

const hidden = { hide: true } as const;

function htmlPage(reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendHtml(reply, status, messagePage(title, message));
}

const spentLink = (reply: FastifyReply) =>
  htmlPage(
    reply,
    410,
    'This portal link no longer works',
    'A portal link opens the portal once, within 15 minutes of being issued; this one was already used, has expired or was revoked. Ask the application that gave it to you for a new link.',
  );
const unknownLink = (reply: FastifyReply) =>
  htmlPage(
    reply,
    404,
    'Unknown portal link',
    'This is not a portal link Signet issued. Check that the whole link was copied, or ask for a new one.',
  );
const noPortal = (reply: FastifyReply, clientId: string) =>
  htmlPage(
    reply,
    403,
    'This client has no webhook portal',
    `The client ${clientId} no longer exists or may not manage webhooks, so its portal cannot open.`,
  );

/**
 * The confirmation form's POST must come from the page itself. The page is served with
 * `Referrer-Policy: no-referrer` (its URL holds the token), under which a browser serializes the form's
 * origin as `null` (Fetch §3.1.5 "serializing a request origin"); a `null` Origin is then accepted only with
 * `Sec-Fetch-Site: same-origin`, which the browser alone sets (Fetch Metadata §2.1.2) and which a sandboxed
 * or cross-site page cannot produce. No Origin at all is refused: every browser sends one on a POST.
 */
function checkLinkFormOrigin(ctx: ConsoleContext, request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === ctx.origin) return;
  if (origin === 'null' && request.headers['sec-fetch-site'] === 'same-origin') return;
  throw new Problem(
    'forbidden',
    `a portal link opens only from its own page on ${ctx.origin}: open the link and press "Open the portal"`,
  );
}

export async function portalRoutes(
  app: FastifyInstance,
  ctx: ConsoleContext,
  db: Db,
  tokens: SessionTokens,
): Promise<void> {
  /** The webhook and event scopes the client is registered for: what its portal token carries. */
  async function portalFor(clientId: string): Promise<Omit<OpenPortal, 'via'> | undefined> {
    const client = await ctx.tokens.client(clientId);
    const scopes = client?.scopes.filter((scope) => PORTAL_SCOPES.includes(scope)) ?? [];
    return client && scopes.length > 0 ? { clientId, clientName: client.name, scopes } : undefined;
  }

  async function openPortal(request: FastifyRequest, reply: FastifyReply, input: OpenPortal): Promise<void> {
    const previous = await ctx.portals.find(request.cookies[ctx.cookies.portal], new Date());
    if (previous) await ctx.portals.remove(previous); // one portal per browser: the new one replaces it
    const id = await ctx.portals.open(input, new Date());
    reply.setCookie(ctx.cookies.portal, id, ctx.cookies.options);
  }

  app.get('/console/portal-links/:token', { schema: hidden }, async (request, reply) => {
    // The token is in this URL: no Referer may carry it anywhere.
    reply.header('referrer-policy', 'no-referrer');
    const { token } = request.params as { token: string };
    const link = await portalLinkState(db, token, new Date());
    if (link.state !== 'usable') return link.state === 'spent' ? spentLink(reply) : unknownLink(reply);
    const portal = await portalFor(link.clientId);
    if (!portal) return noPortal(reply, link.clientId);
    const signedIn = await currentSession(ctx, request);
    const who = signedIn && (signedIn.name || signedIn.email || signedIn.userId);
    return sendHtml(reply, 200, portalConfirmPage(portal.clientName, who));
  });

  app.post('/console/portal-links/:token', { schema: hidden }, async (request, reply) => {
    reply.header('referrer-policy', 'no-referrer');
    checkLinkFormOrigin(ctx, request);
    const { token } = request.params as { token: string };
    const link = await portalLinkState(db, token, new Date());
    if (link.state !== 'usable') return link.state === 'spent' ? spentLink(reply) : unknownLink(reply);
    const portal = await portalFor(link.clientId);
    if (!portal) return noPortal(reply, link.clientId); // the link stays unused: nothing was opened
    // The one decisive step: of two concurrent posts exactly one uses the link (portal-links.service.ts). The
    // session's id is chosen first, so the audit entry of the use names the session it opens.
    const sessionId = newPortalSessionId();
    const by = { requestId: request.id, sourceAddress: request.clientOrigin.ip, sessionId };
    const used = await consumePortalLink(db, token, new Date(), by);
    if (!used) return spentLink(reply);
    await openPortal(request, reply, {
      ...portal,
      via: 'link',
      publicId: sessionId,
      linkId: used.linkId,
      customerId: used.customerId,
    });
    return reply.header('cache-control', 'no-store').redirect('/console/portal', 303);
  });

  app.post('/console/portal-sessions', { schema: hidden }, async (request, reply) => {
    checkOrigin(ctx, request);
    const session = await currentSession(ctx, request);
    if (!session) throw new Problem('unauthorized', 'sign in to the console first (/console/login)');
    requireCsrf(ctx.store.csrfToken(session), request.headers[CSRF_HEADER]);
    const clientId = clientIdOf(request.body);
    if (!(await ownsClient(app, tokens, { session, host: request.headers.host }, clientId)))
      throw new Problem('forbidden', `you do not own the client ${clientId}: its portal is its owner's`);
    const portal = await portalFor(clientId);
    if (!portal) throw new Problem('forbidden', `the client ${clientId} may not manage webhooks, so it has no portal`);
    await openPortal(request, reply, { ...portal, via: 'owner', consoleSessionHash: session.idHash });
    reply.code(201).header('cache-control', 'no-store');
    return { client_id: portal.clientId, client_name: portal.clientName, via: 'owner' };
  });

  app.delete('/console/portal-sessions', { schema: hidden }, async (request, reply) => {
    checkOrigin(ctx, request);
    const portal = await currentPortal(ctx, request);
    if (!portal) throw new Problem('notFound', 'this browser has no portal session');
    requireCsrf(portal.csrf, request.headers[CSRF_HEADER]);
    await ctx.portals.remove(portal.session);
    clearCookie(ctx, reply, ctx.cookies.portal);
    return reply.code(204).send();
  });

  app.get('/console/portal-ended', { schema: hidden }, async (_request, reply) =>
    htmlPage(
      reply,
      200,
      'Your portal session has ended',
      'A portal session lasts an hour. To go on, ask the application that gave you the portal link for a new one.',
    ),
  );
}

/** `{"client_id": "…"}` (JSON): the client whose portal an owner opens. */
function clientIdOf(body: unknown): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.isBuffer(body) ? body.toString('utf8') : '');
  } catch {
    throw new Problem('malformedBody', 'send {"client_id": "…"} as JSON');
  }
  const clientId = (parsed as { client_id?: unknown } | null)?.client_id;
  if (typeof clientId !== 'string' || clientId === '')
    throw new Problem('validation', 'client_id names the client whose portal to open', {
      errors: [{ pointer: '/client_id', detail: 'a client id is required' }],
    });
  return clientId;
}
