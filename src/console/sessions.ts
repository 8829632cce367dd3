// The console's sessions (backend-for-frontend, OAuth 2.0 for Browser-Based Apps §6.1): the browser
// holds an opaque random id in an HttpOnly cookie; the tokens stay on the server, sealed at rest
// (AES-256-GCM bound to the row), in a table any instance can read. The CSRF token is an HMAC of the
// session id, so it needs no storage and changes with every session.
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/executor.ts';
import { seal, unseal } from '../db/sealed.ts';
import type { TokenSet } from './oauth.ts';
import {
  deleteSession,
  findSession,
  insertSession,
  replaceTokens,
  touchSession,
  type SessionRow,
} from './sessions.repository.ts';

interface StoredTokens {
  access: string;
  refresh: string | undefined;
  id: string | undefined;
}

export interface ConsoleSession {
  id: string;
  idHash: string;
  userId: string;
  name: string;
  email: string;
  scope: string;
  tokens: StoredTokens;
  sealedTokens: string;
  accessExpiresAt: Date;
}

/** A separate key for the console (HKDF, RFC 5869), from the key that seals webhook secrets: no new setting. */
export function consoleKey(webhookSecretKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', webhookSecretKey, Buffer.alloc(0), 'signet console sessions', 32));
}

export function hashId(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * `lifetimeSeconds`: the absolute lifetime from sign-in; `idleTimeoutSeconds`: a session unused this long
 * ends (CONSOLE_IDLE_TIMEOUT_SECONDS, docs/security.md, "Console sessions"). A use is written at most once
 * per `touchMs` (a minute, or a tenth of the timeout when that is shorter), not on every request, so the
 * timeout is exact to within that.
 */
export function createSessionStore(deps: { db: Db; key: Buffer; lifetimeSeconds: number; idleTimeoutSeconds: number }) {
  const { db, key } = deps;
  const idleMs = deps.idleTimeoutSeconds * 1000;
  const touchMs = Math.min(60_000, idleMs / 10);

  function open(row: SessionRow, id: string): ConsoleSession {
    const tokens = JSON.parse(unseal(row.sealedTokens, key, row.idHash)) as StoredTokens;
    return { ...row, id, tokens };
  }

  function sealTokens(idHash: string, set: TokenSet, previousRefresh?: string): string {
    const tokens: StoredTokens = {
      access: set.accessToken,
      refresh: set.refreshToken ?? previousRefresh,
      id: set.idToken,
    };
    return seal(JSON.stringify(tokens), key, idHash);
  }

  return {
    /** A new session for a completed sign-in; returns the cookie value. */
    async create(user: { userId: string; name: string; email: string }, set: TokenSet, now: Date): Promise<string> {
      const id = randomBytes(32).toString('base64url');
      const idHash = hashId(id);
      await insertSession(db, {
        idHash,
        ...user,
        scope: set.scope,
        sealedTokens: sealTokens(idHash, set),
        accessExpiresAt: set.expiresAt,
        createdAt: now,
        expiresAt: new Date(now.getTime() + deps.lifetimeSeconds * 1000),
        lastSeenAt: now,
      });
      return id;
    },

    /** The live session: within its lifetime and used within the idle timeout (a use is recorded). */
    async find(id: string | undefined, now: Date): Promise<ConsoleSession | undefined> {
      if (!id) return undefined;
      const row = await findSession(db, hashId(id), now);
      if (!row) return undefined;
      const unused = now.getTime() - row.lastSeenAt.getTime();
      if (unused >= idleMs) {
        await deleteSession(db, row.idHash); // idle: ended for good, whatever comes next
        return undefined;
      }
      if (unused >= touchMs) await touchSession(db, row.idHash, now);
      return open(row, id);
    },

    /** Stores rotated tokens; false when another request replaced them first (then read the row again). */
    async update(session: ConsoleSession, set: TokenSet): Promise<boolean> {
      const sealedTokens = sealTokens(session.idHash, set, session.tokens.refresh);
      return replaceTokens(db, session.idHash, session.sealedTokens, {
        sealedTokens,
        scope: set.scope,
        accessExpiresAt: set.expiresAt,
      });
    },

    async remove(session: ConsoleSession): Promise<void> {
      await deleteSession(db, session.idHash);
    },

    csrfToken(session: ConsoleSession): string {
      return createHmac('sha256', key).update(`csrf:${session.id}`).digest('base64url');
    },

    checkCsrf(session: ConsoleSession, presented: string | undefined): boolean {
      return typeof presented === 'string' && safeEqual(presented, this.csrfToken(session));
    },

    /** The sign-in in progress (state, nonce, PKCE verifier), sealed into a short-lived cookie. */
    sealLogin(login: LoginState): string {
      return seal(JSON.stringify(login), key, 'console-login');
    },

    openLogin(value: string | undefined, now: Date): LoginState | undefined {
      if (!value) return undefined;
      try {
        const login = JSON.parse(unseal(value, key, 'console-login')) as LoginState;
        return login.expiresAt > now.getTime() ? login : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

interface LoginState {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
  expiresAt: number;
}

export type SessionStore = ReturnType<typeof createSessionStore>;
