// The integrator portal's sessions (docs/guides/portal.md, Integrator portal): like a console session, the
// browser holds an opaque random id in an HttpOnly cookie and the server keeps the token, sealed at rest
// (AES-256-GCM bound to the row). Here the token is a client's own access token (console-tokens.ts), so
// the portal acts as that ONE client on the webhook and event API and nothing else.
//
// A portal session lasts one hour, fixed: long enough to set up and test endpoints, short enough that a
// forgotten browser, or a cookie copied from one, stops acting as the client soon. A link's user has no
// account to sign in with again, so nothing extends it: the integrator's application hands out a new link
// (each is one-time, 15 minutes to open). The access token itself is minted again as it nears its expiry.
import { createHmac, randomBytes } from 'node:crypto';
import type Provider from 'oidc-provider';
import {
  issueClientAccessToken,
  type ConsoleToken,
  type PortalTokenClaims,
} from '../auth-server/tokens/console-tokens.ts';
import type { Db, Executor } from '../db/executor.ts';
import { seal, unseal } from '../db/sealed.ts';
import { WEBHOOKS_SCOPES } from '../webhooks/webhooks.feature.ts';
import {
  deletePortalSession,
  deletePortalSessionById,
  deletePortalSessionsOf,
  deletePortalSessionsOfClient,
  deletePortalSessionsOfLink,
  findPortalSession,
  insertPortalSession,
  listPortalSessions,
  replacePortalToken,
  type PortalSessionRow,
  type PortalVia,
} from './portal-sessions.repository.ts';
import { hashId } from './sessions.ts';

const PORTAL_SESSION_SECONDS = 60 * 60;
/** A token this close to its expiry is replaced before use, so no call is made with a dying token. */
const REMINT_BEFORE_MS = 30_000;
/** The scopes of the webhook and event API: a portal token carries those the client is registered for. */
export const PORTAL_SCOPES: readonly string[] = Object.keys(WEBHOOKS_SCOPES);

export interface PortalSession extends PortalSessionRow {
  id: string;
  accessToken: string;
}

/** What the portal needs of the authorization server: the client's registration, and a token for it. */
export interface PortalTokens {
  client(clientId: string): Promise<{ name: string; scopes: string[] } | undefined>;
  mint(clientId: string, scopes: readonly string[], claims?: PortalTokenClaims): Promise<ConsoleToken>;
}

/** Through the provider the holder runs now (it is rebuilt when the signing keys rotate). */
export function portalTokens(holder: { readonly provider: Provider }): PortalTokens {
  return {
    async client(clientId) {
      const client = await holder.provider.Client.find(clientId);
      if (!client) return undefined;
      return { name: String(client.clientName ?? clientId), scopes: (client.scope ?? '').split(' ').filter(Boolean) };
    },
    mint: (clientId, scopes, claims) => issueClientAccessToken(holder.provider, clientId, scopes, claims),
  };
}

export interface OpenPortal {
  clientId: string;
  clientName: string;
  via: PortalVia;
  consoleSessionHash?: string;
  scopes: readonly string[];
  /** The public id to give the session (newPortalSessionId); a new one when absent. */
  publicId?: string;
  linkId?: string;
  /** A customer-scoped link's customer: the session's token is limited to it (docs/guides/portal.md). */
  customerId?: string;
}

/** `ps_` and 32 lower-case hex digits: a session's public id, never its cookie. */
export const PORTAL_SESSION_ID = '^ps_[0-9a-f]{32}$';

export function newPortalSessionId(): string {
  return `ps_${randomBytes(16).toString('hex')}`;
}

type TokenOwner = Pick<PortalSessionRow, 'idHash' | 'publicId' | 'clientId' | 'scope' | 'linkId' | 'customerId'>;

/** What the session's every token says about it: the session, its link, its customer (console-tokens.ts). */
function claimsOf(session: TokenOwner): PortalTokenClaims {
  return {
    session_id: session.publicId,
    ...(session.linkId && { link_id: session.linkId }),
    ...(session.customerId && { customer_id: session.customerId }),
  };
}

export function createPortalStore(deps: { db: Db; key: Buffer; tokens: PortalTokens }) {
  const { db, key, tokens } = deps;
  const aad = (idHash: string) => `portal:${idHash}`;

  async function minted(session: TokenOwner, now: Date) {
    const token = await tokens.mint(session.clientId, session.scope.split(' '), claimsOf(session));
    return {
      accessToken: token.accessToken,
      sealedToken: seal(token.accessToken, key, aad(session.idHash)),
      scope: token.scope,
      accessExpiresAt: new Date(now.getTime() + token.expiresIn * 1000),
    };
  }

  return {
    /** Mints the client's token and stores a new session; returns the cookie value. */
    async open(input: OpenPortal, now: Date): Promise<string> {
      const id = randomBytes(32).toString('base64url');
      const idHash = hashId(id);
      const owner: TokenOwner = {
        idHash,
        publicId: input.publicId ?? newPortalSessionId(),
        clientId: input.clientId,
        scope: input.scopes.join(' '),
        linkId: input.linkId,
        customerId: input.customerId,
      };
      const token = await minted(owner, now);
      await insertPortalSession(db, {
        ...owner,
        clientId: input.clientId,
        clientName: input.clientName,
        via: input.via,
        consoleSessionHash: input.consoleSessionHash,
        scope: token.scope,
        sealedToken: token.sealedToken,
        accessExpiresAt: token.accessExpiresAt,
        createdAt: now,
        expiresAt: new Date(now.getTime() + PORTAL_SESSION_SECONDS * 1000),
      });
      return id;
    },

    async find(id: string | undefined, now: Date): Promise<PortalSession | undefined> {
      if (!id) return undefined;
      const row = await findPortalSession(db, hashId(id), now);
      return row && { ...row, id, accessToken: unseal(row.sealedToken, key, aad(row.idHash)) };
    },

    /**
     * The session's access token, minted again first when it is about to expire (or `force`d after a 401).
     * `beforeMint` may refuse the new token by throwing (an owner's portal asks again whether they own it).
     */
    async accessToken(
      session: PortalSession,
      now: Date,
      options: { force?: boolean; beforeMint?: () => Promise<void> } = {},
    ): Promise<string> {
      if (!options.force && session.accessExpiresAt.getTime() - now.getTime() > REMINT_BEFORE_MS)
        return session.accessToken;
      await options.beforeMint?.();
      const token = await minted(session, now);
      await replacePortalToken(db, session.idHash, token);
      return token.accessToken;
    },

    async remove(session: PortalSession): Promise<void> {
      await deletePortalSession(db, session.idHash);
    },

    /** Ends the portals an owner opened from this console session. */
    async removeFor(consoleSessionHash: string): Promise<void> {
      await deletePortalSessionsOf(db, consoleSessionHash);
    },

    /** Ends a client's portals: all of them (`'all'`, the client is gone) or its owners' (the owner changed). */
    async removeOfClient(clientId: string, which: 'all' | 'owner'): Promise<void> {
      await deletePortalSessionsOfClient(db, clientId, which === 'owner' ? 'owner' : undefined);
    },

    /** Open sessions for the admin API, newest first; one more than `limit`. */
    list: (options: Parameters<typeof listPortalSessions>[1]) => listPortalSessions(db, options),

    /** Ends a session by its public id (an admin's revocation): its next request finds none. */
    end: (publicId: string, executor: Executor = db) => deletePortalSessionById(executor, publicId),

    /** Ends the sessions a link opened (the link was revoked). */
    endOfLink: (linkId: string) => deletePortalSessionsOfLink(db, linkId),

    /** A link's portal has no console session: its CSRF token is an HMAC of its own id. */
    csrfToken(session: PortalSession): string {
      return createHmac('sha256', key).update(`csrf-portal:${session.id}`).digest('base64url');
    },
  };
}

export type PortalStore = ReturnType<typeof createPortalStore>;
