// Portal links (docs/guides/portal.md, "Portal links"): a client with webhooks:manage asks for a one-time URL
// that opens the console's integrator portal, for its own staff (no customer) or for ONE of its customers
// (`CustomerId`: that customer sees and changes only its own endpoints, like a Svix application portal). The
// token is 256 random bits, base64url; only its SHA-256 is stored (a fast hash suffices for a value nobody can
// guess). A link works once, for 15 minutes, unless revoked first; its public id (`pl_…`) names it in the audit
// trail and the admin API.
import { createHash, randomBytes } from 'node:crypto';
import { recordAudit } from '../../audit/audit.ts';
import type { Db, Executor } from '../../db/executor.ts';
import { Problem } from '../../http/problems/problems.ts';
import {
  findPortalLink,
  findPortalLinkById,
  insertPortalLink,
  listPortalLinks,
  purgePortalLinks,
  revokePortalLink,
  revokePortalLinksOfClient,
  usePortalLink,
  type PortalLinkRecord,
} from '../store/portal-links.repository.ts';
import type { ChangedBy } from './endpoints.service.ts';

const PORTAL_LINK_TTL_MS = 15 * 60_000;
/** Where the console serves the portal for a link (src/console/). */
const PORTAL_LINK_PATH = '/console/portal-links/';
const TOKEN_BYTES = 32;
/** 32 bytes in base64url, without padding (RFC 4648 §5). */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** `pl_` and 32 lower-case hex digits. */
export const PORTAL_LINK_ID = '^pl_[0-9a-f]{32}$';

/** Where a request came from; the actor is always the client the link is for. */
type From = Omit<ChangedBy, 'actor' | 'portal'>;

export function hashPortalToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface IssuedPortalLink {
  id: string;
  url: string;
  expiresAt: Date;
  customerId: string | undefined;
}

/**
 * A new link for `clientId` (and its customer `customerId`, lower case), recorded as portal_link.issued with the
 * link's id and expiry (never the token).
 */
export async function issuePortalLink(
  db: Db,
  input: { clientId: string; customerId?: string; baseUrl: string; now: Date },
  by: From,
): Promise<IssuedPortalLink> {
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const id = `pl_${randomBytes(16).toString('hex')}`;
  const customerId = input.customerId?.toLowerCase();
  const expiresAt = new Date(input.now.getTime() + PORTAL_LINK_TTL_MS);
  await db.transaction().execute(async (trx) => {
    // Links expired for a day are of no use to anyone: cleared here rather than by a timer.
    await purgePortalLinks(trx, new Date(input.now.getTime() - 86_400_000));
    await insertPortalLink(trx, {
      id,
      tokenHash: hashPortalToken(token),
      clientId: input.clientId,
      customerId,
      createdAt: input.now,
      expiresAt,
    });
    await recordAudit(trx, {
      ...by,
      actor: { type: 'client', id: input.clientId },
      action: 'portal_link.issued',
      target: { type: 'portal_link', id },
      details: {
        client_id: input.clientId,
        expires_at: expiresAt.toISOString(),
        ...(customerId && { customer_id: customerId }),
      },
      at: input.now,
    });
  });
  return { id, url: `${input.baseUrl}${PORTAL_LINK_PATH}${token}`, expiresAt, customerId };
}

export interface UsedPortalLink {
  clientId: string;
  linkId: string;
  customerId: string | undefined;
}

/**
 * For the console: uses a link once. One UPDATE … WHERE unused AND unrevoked AND unexpired RETURNING decides, so
 * two concurrent uses give exactly one success; a used, revoked, expired, unknown or malformed token is undefined.
 * The use is recorded as portal_link.used in the same transaction, with the client as actor, naming the link and
 * the portal session it opens (`sessionId`).
 */
export async function consumePortalLink(
  db: Db,
  token: string,
  now: Date,
  by: From & { sessionId?: string } = {},
): Promise<UsedPortalLink | undefined> {
  if (!TOKEN_PATTERN.test(token)) return undefined;
  const { sessionId, ...from } = by;
  return db.transaction().execute(async (trx) => {
    const link = await usePortalLink(trx, hashPortalToken(token), now);
    if (link === undefined) return undefined;
    await recordAudit(trx, {
      ...from,
      actor: { type: 'client', id: link.clientId },
      action: 'portal_link.used',
      target: { type: 'portal_link', id: link.id },
      details: {
        client_id: link.clientId,
        ...(link.customerId && { customer_id: link.customerId }),
        ...(sessionId && { portal_session_id: sessionId }),
      },
      at: now,
    });
    return { clientId: link.clientId, linkId: link.id, customerId: link.customerId };
  });
}

/**
 * For the console, without using the link: `usable` (unused, unrevoked, unexpired: its client and customer),
 * `spent` (used, revoked or expired, still on file: 410 Gone) or `unknown` (never issued, malformed or purged: 404).
 */
export async function portalLinkState(
  db: Db,
  token: string,
  now: Date,
): Promise<{ state: 'usable'; clientId: string; customerId: string | undefined } | { state: 'spent' | 'unknown' }> {
  if (!TOKEN_PATTERN.test(token)) return { state: 'unknown' };
  const link = await findPortalLink(db, hashPortalToken(token));
  if (!link) return { state: 'unknown' };
  if (link.usedAt !== undefined || link.revokedAt !== undefined || link.expiresAt <= now) return { state: 'spent' };
  return { state: 'usable', clientId: link.clientId, customerId: link.customerId };
}

/** The admin API's view of the links on file: newest first, a page at a time. */
export async function listLinks(
  db: Db,
  options: { clientId?: string; before?: { createdAt: Date; id: string }; limit: number },
): Promise<{ items: PortalLinkRecord[]; hasMore: boolean }> {
  const rows = await listPortalLinks(db, options);
  return { items: rows.slice(0, options.limit), hasMore: rows.length > options.limit };
}

/**
 * Revokes a link (an admin's DELETE): unused, it can no longer open a portal. Audited as portal_link.revoked when it
 * was not revoked already; 404 for an unknown id. The caller ends the sessions it opened (the console owns them).
 */
export async function revokeLink(
  executor: Executor,
  id: string,
  now: Date,
  by: Omit<ChangedBy, 'portal'>,
): Promise<PortalLinkRecord> {
  const link = await findPortalLinkById(executor, id);
  if (!link) throw new Problem('notFound', `portal link ${id} does not exist (or expired more than a day ago)`);
  if (await revokePortalLink(executor, id, now))
    await recordAudit(executor, {
      ...by,
      action: 'portal_link.revoked',
      target: { type: 'portal_link', id },
      details: { client_id: link.clientId, ...(link.customerId && { customer_id: link.customerId }) },
      at: now,
    });
  return link;
}

/** Every unrevoked link of a client stops working (its secret was rotated, or it was deleted). */
export function revokeLinksOfClient(executor: Executor, clientId: string, now: Date): Promise<number> {
  return revokePortalLinksOfClient(executor, clientId, now);
}
