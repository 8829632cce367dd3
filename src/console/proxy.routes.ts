// /console/api/* → /api/*: the backend-for-frontend's token-mediating half (OAuth 2.0 for Browser-Based
// Apps §6.1). The browser sends its session cookie and the CSRF header; the call goes on in process, through
// the public API like any client's, with the session's access token (kept fresh by session-tokens.ts).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { apiTarget, CSRF_HEADER, forwardToApi, relayResponse } from './api-forward.ts';
import { answerAsPortal, currentPortal, portalMayCall } from './portal.ts';
import { Problem } from '../http/problems/problems.ts';
import { checkOrigin } from './auth.routes.ts';
import { clearCookie, currentSession, requireCsrf, type ConsoleContext } from './context.ts';
import type { SessionTokens } from './session-tokens.ts';
import type { ConsoleSession } from './sessions.ts';

export async function proxyRoutes(app: FastifyInstance, ctx: ConsoleContext, tokens: SessionTokens): Promise<void> {
  async function signedOut(reply: FastifyReply, session: ConsoleSession): Promise<never> {
    await ctx.store.remove(session);
    clearCookie(ctx, reply, ctx.cookies.session);
    throw new Problem('unauthorized', 'the console session has ended: sign in again');
  }

  app.all('/console/api/*', { schema: { hide: true } }, async (request, reply) => {
    // A portal session acts as its one client (or customer), on the calls its pages make only (portal.ts). It never
    // stands in for the browser's console session: any other API call goes on as the signed-in user, with
    // that session's own CSRF token (which a link's portal page does not hold).
    const portal = await currentPortal(ctx, request);
    const session = await currentSession(ctx, request);
    if (portal && (portalMayCall(request.method, apiTarget(request.url)) || !session)) {
      checkOrigin(ctx, request);
      return answerAsPortal(app, ctx, tokens, portal, request, reply);
    }
    if (!session) throw new Problem('unauthorized', 'sign in to the console first (/console/login)');
    checkOrigin(ctx, request);
    requireCsrf(ctx.store.csrfToken(session), request.headers[CSRF_HEADER]);
    const answer = await tokens.asUser(session, (access) => forwardToApi(app, request, access));
    if (!answer) return signedOut(reply, session);
    return relayResponse(reply, answer.response);
  });
}
