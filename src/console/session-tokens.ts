// The console session's access token, kept usable (OAuth 2.0 for Browser-Based Apps §6.1: the BFF holds the
// tokens): refreshed before it expires or once after a 401, for every call the console makes as its user
// (the /console/api proxy, the owner check of the integrator portal). The refresh token rotates: the new
// one is kept.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { ConsoleContext } from './context.ts';
import { refreshTokens, TokenRequestError } from './oauth.ts';
import type { ConsoleSession } from './sessions.ts';

const REFRESH_BEFORE_MS = 30_000;

interface UserCall {
  session: ConsoleSession;
  response: LightMyRequestResponse;
}

export function sessionTokens(app: FastifyInstance, ctx: ConsoleContext) {
  // One refresh at a time per session in this process: a rotated refresh token is single-use.
  const refreshing = new Map<string, Promise<ConsoleSession | undefined>>();

  function refresh(session: ConsoleSession): Promise<ConsoleSession | undefined> {
    const running = refreshing.get(session.idHash);
    if (running) return running;
    const next = (async () => {
      if (!session.tokens.refresh) return undefined;
      try {
        const tokens = await refreshTokens(app, ctx.oauth, session.tokens.refresh, new Date());
        if (await ctx.store.update(session, tokens)) return ctx.store.find(session.id, new Date());
      } catch (err) {
        if (!(err instanceof TokenRequestError)) throw err;
      }
      // Refused (revoked, expired) or replaced by another instance's refresh: read what the row holds now.
      const now = await ctx.store.find(session.id, new Date());
      return now && now.sealedTokens !== session.sealedTokens ? now : undefined;
    })().finally(() => refreshing.delete(session.idHash));
    refreshing.set(session.idHash, next);
    return next;
  }

  return {
    /**
     * `call` with the session's access token: refreshed first when about to expire, and once more after a
     * 401. Undefined when the session can no longer get a token (its user must sign in again).
     */
    async asUser(
      session: ConsoleSession,
      call: (accessToken: string) => Promise<LightMyRequestResponse>,
    ): Promise<UserCall | undefined> {
      let current: ConsoleSession | undefined = session;
      if (current.accessExpiresAt.getTime() - Date.now() < REFRESH_BEFORE_MS) current = await refresh(current);
      if (!current) return undefined;
      const response = await call(current.tokens.access);
      if (response.statusCode !== 401) return { session: current, response };
      const renewed = await refresh(current);
      return renewed && { session: renewed, response: await call(renewed.tokens.access) };
    },
  };
}

export type SessionTokens = ReturnType<typeof sessionTokens>;
