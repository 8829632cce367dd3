// SQL of the portal links (docs/guides/portal.md, "Portal links"): one row per link, keyed by the SHA-256 of its
// token, with a public id (`pl_…`) to list and revoke it by. Using a link is one conditional UPDATE, so of two
// concurrent uses exactly one finds it unused.
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import type { Executor } from '../../db/executor.ts';
import type { WebhookPortalLinksTable } from '../../db/schema.ts';
import { pastPosition } from '../../db/keyset.ts';

export interface PortalLinkRecord {
  id: string;
  clientId: string;
  /** The customer it is for; undefined: the client's own staff. */
  customerId: string | undefined;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | undefined;
  revokedAt: Date | undefined;
}

function toRecord(row: WebhookPortalLinksTable): PortalLinkRecord {
  return {
    id: row.id ?? '',
    clientId: row.client_id,
    customerId: row.customer_id ?? undefined,
    createdAt: fromDbTime(row.created_at),
    expiresAt: fromDbTime(row.expires_at),
    usedAt: row.used_at === null ? undefined : fromDbTime(row.used_at),
    revokedAt: row.revoked_at === null ? undefined : fromDbTime(row.revoked_at),
  };
}

export async function insertPortalLink(
  db: Executor,
  link: { id: string; tokenHash: string; clientId: string; customerId?: string; createdAt: Date; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('webhook_portal_links')
    .values({
      id: link.id,
      token_hash: link.tokenHash,
      client_id: link.clientId,
      customer_id: link.customerId ?? null,
      created_at: toDbTime(link.createdAt),
      expires_at: toDbTime(link.expiresAt),
      used_at: null,
      revoked_at: null,
    })
    .execute();
}

/**
 * Marks the link used and returns it, when it was unused, unrevoked and unexpired at `now`; undefined otherwise.
 * The row lock (PostgreSQL) or the write lock (SQLite) makes a second UPDATE see the first one's used_at.
 */
export async function usePortalLink(db: Executor, tokenHash: string, now: Date): Promise<PortalLinkRecord | undefined> {
  const at = toDbTime(now);
  const row = await db
    .updateTable('webhook_portal_links')
    .set({ used_at: at })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', at)
    .returningAll()
    .executeTakeFirst();
  return row && toRecord(row);
}

/** Links that expired before `before`: nothing can use them any more. */
export async function purgePortalLinks(db: Executor, before: Date): Promise<number> {
  const result = await db
    .deleteFrom('webhook_portal_links')
    .where('expires_at', '<', toDbTime(before))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The link with this hash, used or not (undefined: never issued, or purged). */
export async function findPortalLink(db: Executor, tokenHash: string): Promise<PortalLinkRecord | undefined> {
  const row = await db
    .selectFrom('webhook_portal_links')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  return row && toRecord(row);
}

/** The link with this public id. */
export async function findPortalLinkById(db: Executor, id: string): Promise<PortalLinkRecord | undefined> {
  const row = await db.selectFrom('webhook_portal_links').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toRecord(row);
}

/** Links on file (a day past their expiry at most), newest first, from just after `before`; one more than `limit`. */
export async function listPortalLinks(
  db: Executor,
  options: { clientId?: string; before?: { createdAt: Date; id: string }; limit: number },
): Promise<PortalLinkRecord[]> {
  let query = db.selectFrom('webhook_portal_links').selectAll().where('id', 'is not', null);
  if (options.clientId !== undefined) query = query.where('client_id', '=', options.clientId);
  const before = options.before;
  if (before) query = query.where(pastPosition('<', before));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit + 1)
    .execute();
  return rows.map(toRecord);
}

/** Revokes one link (true when it was not revoked before). */
export async function revokePortalLink(db: Executor, id: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('webhook_portal_links')
    .set({ revoked_at: toDbTime(now) })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Revokes every link of a client not yet revoked (its secret rotated, or it was deleted); how many. */
export async function revokePortalLinksOfClient(db: Executor, clientId: string, now: Date): Promise<number> {
  const result = await db
    .updateTable('webhook_portal_links')
    .set({ revoked_at: toDbTime(now) })
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
