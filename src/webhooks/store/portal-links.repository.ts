// SQL of the portal links (docs/guides/portal.md, "Portal links"): one row per link, keyed by the SHA-256 of its
// token. Using a link is one conditional UPDATE, so of two concurrent uses exactly one finds it unused.
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import type { Executor } from '../../db/executor.ts';

export async function insertPortalLink(
  db: Executor,
  link: { tokenHash: string; clientId: string; createdAt: Date; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('webhook_portal_links')
    .values({
      token_hash: link.tokenHash,
      client_id: link.clientId,
      created_at: toDbTime(link.createdAt),
      expires_at: toDbTime(link.expiresAt),
      used_at: null,
    })
    .execute();
}

/**
 * Marks the link used and returns its client, when it was unused and unexpired at `now`; undefined otherwise.
 * The row lock (PostgreSQL) or the write lock (SQLite) makes a second UPDATE see the first one's used_at.
 */
export async function usePortalLink(db: Executor, tokenHash: string, now: Date): Promise<string | undefined> {
  const at = toDbTime(now);
  const row = await db
    .updateTable('webhook_portal_links')
    .set({ used_at: at })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', at)
    .returning('client_id')
    .executeTakeFirst();
  return row?.client_id;
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
export async function findPortalLink(
  db: Executor,
  tokenHash: string,
): Promise<{ clientId: string; usedAt: Date | undefined; expiresAt: Date } | undefined> {
  const row = await db
    .selectFrom('webhook_portal_links')
    .select(['client_id', 'used_at', 'expires_at'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    clientId: row.client_id,
    usedAt: row.used_at === null ? undefined : fromDbTime(row.used_at),
    expiresAt: fromDbTime(row.expires_at),
  };
}
