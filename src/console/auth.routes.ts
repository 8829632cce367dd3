// Sign-in and sign-out of the console (OAuth 2.0 for Browser-Based Apps, backend-for-frontend §6.1): the
// authorization code flow with PKCE (RFC 7636, S256) as the built-in client `signet-console`; the server
// exchanges the code and keeps the tokens, the browser gets an HttpOnly session cookie.
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Problem } from '../http/problems/problems.ts';
import { CONSOLE_CLIENT_ID } from './client.ts';
import { clearCookie, currentSession, requireCsrf, rolesOf, safeReturnTo, type ConsoleContext } from './context.ts';
import { endSignetSession, exchangeCode, idTokenClaims, revokeToken, TokenRequestError } from './oauth.ts';
import { portalClosedPage, sendHtml, signedOutPage, signingOutPage, signInFailedPage } from './pages.ts';
import { currentPortal, endPortal, portalView } from './portal.ts';
import { safeEqual } from './sessions.ts';

const LOGIN_TTL_MS = 10 * 60 * 1000; // the authorization request's interaction lives as long (provider.ts)
const hidden = { hide: true } as const;

function random(): string {
  return randomBytes(32).toString('base64url');
}

/** A query parameter's one value; a repeated parameter (an array) or none is undefined. */
function single(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export async function authRoutes(app: FastifyInstance, ctx: ConsoleContext): Promise<void> {
  const redirectUri = `${ctx.origin}/console/callback`;

  app.get('/console/login', { schema: hidden }, async (request, reply) => {
    const { return_to: returnTo } = request.query as Record<string, unknown>;
    const verifier = random();
    const login = { state: random(), nonce: random(), verifier, returnTo: safeReturnTo(returnTo) };
    const cookie = ctx.store.sealLogin({ ...login, expiresAt: Date.now() + LOGIN_TTL_MS });
    reply.setCookie(ctx.cookies.login, cookie, { ...ctx.cookies.options, maxAge: LOGIN_TTL_MS / 1000 });
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: CONSOLE_CLIENT_ID,
      redirect_uri: redirectUri,
      scope: ctx.scopes.join(' '),
      state: login.state,
      nonce: login.nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      // OIDC Core §3.1.2.1 max_age: a Signet session whose password was entered longer ago than the idle
      // timeout signs no one in to the console without asking again, so the timeout cannot be undone by
      // the Signet session behind it (docs/security.md, "Console sessions").
      max_age: String(ctx.idleTimeoutSeconds),
    });
    return reply.header('cache-control', 'no-store').redirect(`${ctx.oauth.issuerPath}/authorize?${query}`, 302);
  });

  app.get('/console/callback', { schema: hidden }, async (request, reply) => callback(request, reply));

  async function callback(request: FastifyRequest, reply: FastifyReply) {
    // Only single values: a parameter given twice arrives as an array, and means nothing here.
    const raw = request.query as Record<string, unknown>;
    const query = {
      state: single(raw.state),
      iss: raw.iss === undefined ? undefined : (single(raw.iss) ?? ''),
      code: single(raw.code),
      error: raw.error === undefined ? undefined : (single(raw.error) ?? 'invalid_request'),
      error_description: single(raw.error_description),
    };
    const login = ctx.store.openLogin(request.cookies[ctx.cookies.login], new Date());
    clearCookie(ctx, reply, ctx.cookies.login); // one use, whatever happens next
    if (!login || typeof query.state !== 'string' || !safeEqual(query.state, login.state))
      return sendHtml(
        reply,
        400,
        signInFailedPage('This sign-in expired or was not started here. Please start again.'),
      );
    // RFC 9207 §2.4: the response names its issuer; it must be ours.
    if (query.iss !== undefined && query.iss !== `${ctx.origin}${ctx.oauth.issuerPath}`)
      return sendHtml(reply, 400, signInFailedPage('The sign-in answer came from another issuer.'));
    if (query.error || !query.code)
      return sendHtml(reply, 400, signInFailedPage(query.error_description ?? query.error ?? 'No authorization code.'));
    try {
      const now = new Date();
      const tokens = await exchangeCode(
        app,
        ctx.oauth,
        { code: query.code, verifier: login.verifier, redirectUri },
        now,
      );
      const claims = idTokenClaims(tokens.idToken, login.nonce);
      const user = { userId: String(claims.sub), name: String(claims.name ?? ''), email: String(claims.email ?? '') };
      const id = await ctx.store.create(user, tokens, now);
      reply.setCookie(ctx.cookies.session, id, ctx.cookies.options);
      return reply.header('cache-control', 'no-store').redirect(login.returnTo, 303);
    } catch (err) {
      if (!(err instanceof TokenRequestError)) throw err;
      request.log.warn({ error: err.error }, 'console sign-in: the code exchange failed');
      return sendHtml(reply, 400, signInFailedPage(`The sign-in could not be completed (${err.error}).`));
    }
  }

  app.get('/console/session', { schema: hidden }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    // A portal link's session is the whole story (no user); an owner's portal adds `portal` to theirs.
    const portal = await currentPortal(ctx, request);
    if (portal?.session.via === 'link')
      return {
        signed_in: true,
        name: portal.session.clientName,
        email: '',
        roles: [],
        csrf_token: portal.csrf,
        portal: portalView(portal),
      };
    const session = await currentSession(ctx, request);
    if (!session) return { signed_in: false };
    return {
      signed_in: true,
      sub: session.userId,
      name: session.name,
      email: session.email,
      roles: rolesOf(session.scope),
      csrf_token: ctx.store.csrfToken(session),
      ...(portal && { portal: portalView(portal) }),
    };
  });

  app.post('/console/logout', { schema: hidden }, async (request, reply) => {
    checkOrigin(ctx, request);
    const form = new URLSearchParams(Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '');
    // A portal link's session has no Signet session behind it: ending the portal is the whole sign-out.
    if ((await endPortal(ctx, request, reply, form.get('csrf') ?? undefined))?.session.via === 'link')
      return sendHtml(reply, 200, portalClosedPage());
    const session = await currentSession(ctx, request);
    if (session) requireCsrf(ctx.store.csrfToken(session), form.get('csrf') ?? undefined, 'form');
    // The cookie goes first: whatever fails below, this browser is signed out of the console.
    clearCookie(ctx, reply, ctx.cookies.session);
    if (session) {
      await ctx.store.remove(session);
      await ctx.portals.removeFor(session.idHash);
      // The Signet session too, here and now (oauth.ts endSignetSession): no page has to be shown or
      // confirmed, so closing the tab cannot leave a session that signs the browser straight back in.
      const signet = await endSignetSession(app, ctx.oauth, {
        idToken: session.tokens.id,
        cookie: request.headers.cookie,
      }).catch((err: unknown) => {
        request.log.warn({ err }, 'console sign-out: the Signet session could not be ended here');
        return { ended: false, setCookie: [] };
      });
      for (const line of signet.setCookie) reply.header('set-cookie', line);
      // RFC 7009 §2.2: revocation is best effort here; the session row, the only holder, is already gone.
      if (session.tokens.refresh)
        await revokeToken(app, ctx.oauth, session.tokens.refresh).catch((err: unknown) =>
          request.log.warn({ err }, 'console sign-out: the refresh token could not be revoked'),
        );
      if (signet.ended) return reply.header('cache-control', 'no-store').redirect('/console/signed-out', 303);
    }
    // No Signet session could be ended here (no console session, or no session cookie): the browser goes to
    // Signet's end_session endpoint itself (RP-Initiated Logout), which asks before it ends one.
    const page = signingOutPage(
      `${ctx.oauth.issuerPath}/session/end`,
      CONSOLE_CLIENT_ID,
      `${ctx.origin}/console/signed-out`,
    );
    return sendHtml(reply, 200, page);
  });

  app.get('/console/signed-out', { schema: hidden }, async (_request, reply) => sendHtml(reply, 200, signedOutPage()));
}

/** A browser names the page's origin on a POST (Fetch §3.2.5): another site's is refused. */
export function checkOrigin(ctx: ConsoleContext, request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== ctx.origin)
    throw new Problem(
      'forbidden',
      `requests from ${origin} are not accepted: the console is served from ${ctx.origin}`,
    );
}
