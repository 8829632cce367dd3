// SQL for the integrator portal's sessions (migration 0012). Rows are keyed by the SHA-256 of the cookie
// value, so a copy of the table hands out no session; the token column is sealed by portal-sessions.ts.
import { fromDbTime, toDbTime } from '../db/codecs.ts';
import type { Executor } from '../db/executor.ts';
import type { ConsolePortalSessionsTable } from '../db/schema.ts';
import { pastPosition } from '../db/keyset.ts';

export type PortalVia = 'link' | 'owner';

export interface PortalSessionRow {
  idHash: string;
  /** The public id (`ps_…`): the audit trail and the admin API name the session by it, never by the cookie. */
  publicId: string;
  /** The link that opened it (a link's portal). */
  linkId: string | undefined;
  /** The customer it is limited to (a customer-scoped link's portal); undefined: the whole client. */
  customerId: string | undefined;
  clientId: string;
  clientName: string;
  via: PortalVia;
  /** The owner's console session this portal belongs to; undefined for a link. */
  consoleSessionHash: string | undefined;
  scope: string;
  sealedToken: string;
  accessExpiresAt: Date;
  createdAt: Date;
  expiresAt: Date;
}

function fromRow(row: ConsolePortalSessionsTable): PortalSessionRow {
  return {
    idHash: row.id_hash,
    publicId: row.id ?? '',
    linkId: row.link_id ?? undefined,
    customerId: row.customer_id ?? undefined,
    clientId: row.client_id,
    clientName: row.client_name,
    via: row.via === 'owner' ? 'owner' : 'link',
    consoleSessionHash: row.console_session_hash ?? undefined,
    scope: row.scope,
    sealedToken: row.token,
    accessExpiresAt: fromDbTime(row.access_expires_at),
    createdAt: fromDbTime(row.created_at),
    expiresAt: fromDbTime(row.expires_at),
  };
}

export async function insertPortalSession(db: Executor, row: PortalSessionRow): Promise<void> {
  await db
    .insertInto('console_portal_sessions')
    .values({
      id_hash: row.idHash,
      id: row.publicId,
      link_id: row.linkId ?? null,
      customer_id: row.customerId ?? null,
      client_id: row.clientId,
      client_name: row.clientName,
      via: row.via,
      console_session_hash: row.consoleSessionHash ?? null,
      scope: row.scope,
      token: row.sealedToken,
      access_expires_at: toDbTime(row.accessExpiresAt),
      created_at: toDbTime(row.createdAt),
      expires_at: toDbTime(row.expiresAt),
    })
    .execute();
}

/** The live portal session with this hash, or undefined (none, or expired). */
export async function findPortalSession(
  db: Executor,
  idHash: string,
  now: Date,
): Promise<PortalSessionRow | undefined> {
  const row = await db
    .selectFrom('console_portal_sessions')
    .selectAll()
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
  if (!row) return undefined;
  const session = fromRow(row);
  return session.expiresAt > now ? session : undefined;
}

/** A newly minted token; last writer wins (both tokens are valid: nothing single-use is lost). */
export async function replacePortalToken(
  db: Executor,
  idHash: string,
  next: { sealedToken: string; scope: string; accessExpiresAt: Date },
): Promise<void> {
  await db
    .updateTable('console_portal_sessions')
    .set({ token: next.sealedToken, scope: next.scope, access_expires_at: toDbTime(next.accessExpiresAt) })
    .where('id_hash', '=', idHash)
    .execute();
}

export async function deletePortalSession(db: Executor, idHash: string): Promise<void> {
  await db.deleteFrom('console_portal_sessions').where('id_hash', '=', idHash).execute();
}

/** The portals an owner opened from one console session: they end with it (sign-out). */
export async function deletePortalSessionsOf(db: Executor, consoleSessionHash: string): Promise<void> {
  await db.deleteFrom('console_portal_sessions').where('console_session_hash', '=', consoleSessionHash).execute();
}

/** A client's portals, or only those opened `via` one way: they end when the client or its owner changes. */
export async function deletePortalSessionsOfClient(db: Executor, clientId: string, via?: PortalVia): Promise<void> {
  let query = db.deleteFrom('console_portal_sessions').where('client_id', '=', clientId);
  if (via) query = query.where('via', '=', via);
  await query.execute();
}

export async function deleteExpiredPortalSessions(db: Executor, now: Date): Promise<void> {
  await db.deleteFrom('console_portal_sessions').where('expires_at', '<=', toDbTime(now)).execute();
}

/** Open sessions (unexpired), newest first, from just after `before`; one more than `limit`. */
export async function listPortalSessions(
  db: Executor,
  options: { now: Date; clientId?: string; before?: { createdAt: Date; id: string }; limit: number },
): Promise<PortalSessionRow[]> {
  let query = db
    .selectFrom('console_portal_sessions')
    .selectAll()
    .where('expires_at', '>', toDbTime(options.now))
    .where('id', 'is not', null);
  if (options.clientId !== undefined) query = query.where('client_id', '=', options.clientId);
  const before = options.before;
  if (before) query = query.where(pastPosition('<', before));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit + 1)
    .execute();
  return rows.map(fromRow);
}

/** Ends one session by its public id; the session that ended, if it was open. */
export async function deletePortalSessionById(db: Executor, id: string): Promise<PortalSessionRow | undefined> {
  const row = await db.deleteFrom('console_portal_sessions').where('id', '=', id).returningAll().executeTakeFirst();
  return row && fromRow(row);
}

/** Ends the sessions a link opened (the link was revoked). */
export async function deletePortalSessionsOfLink(db: Executor, linkId: string): Promise<number> {
  const result = await db.deleteFrom('console_portal_sessions').where('link_id', '=', linkId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
