// SQL for the console's sessions (migration 0008). Rows are keyed by the SHA-256 of the cookie value,
// so a copy of the table does not hand out sessions; the tokens column is sealed by sessions.ts.
import { fromDbTime, toDbTime } from '../db/codecs.ts';
import type { Executor } from '../db/executor.ts';
import type { ConsoleSessionsTable } from '../db/schema.ts';

export interface SessionRow {
  idHash: string;
  userId: string;
  name: string;
  email: string;
  scope: string;
  sealedTokens: string;
  accessExpiresAt: Date;
  createdAt: Date;
  expiresAt: Date;
  /** When the session was last used (migration 0015), for the idle timeout. */
  lastSeenAt: Date;
}

function fromRow(row: ConsoleSessionsTable): SessionRow {
  return {
    idHash: row.id_hash,
    userId: row.user_id,
    name: row.name,
    email: row.email,
    scope: row.scope,
    sealedTokens: row.tokens,
    accessExpiresAt: fromDbTime(row.access_expires_at),
    createdAt: fromDbTime(row.created_at),
    expiresAt: fromDbTime(row.expires_at),
    lastSeenAt: fromDbTime(row.last_seen_at ?? row.created_at),
  };
}

export async function insertSession(db: Executor, row: SessionRow): Promise<void> {
  await db
    .insertInto('console_sessions')
    .values({
      id_hash: row.idHash,
      user_id: row.userId,
      name: row.name,
      email: row.email,
      scope: row.scope,
      tokens: row.sealedTokens,
      access_expires_at: toDbTime(row.accessExpiresAt),
      created_at: toDbTime(row.createdAt),
      expires_at: toDbTime(row.expiresAt),
      last_seen_at: toDbTime(row.lastSeenAt),
    })
    .execute();
}

/** The session with this hash within its absolute lifetime, or undefined (none, or expired); idle or not. */
export async function findSession(db: Executor, idHash: string, now: Date): Promise<SessionRow | undefined> {
  const row = await db
    .selectFrom('console_sessions')
    .select([
      'id_hash',
      'user_id',
      'name',
      'email',
      'scope',
      'tokens',
      'access_expires_at',
      'created_at',
      'expires_at',
      'last_seen_at',
    ])
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
  if (!row) return undefined;
  const session = fromRow(row);
  return session.expiresAt > now ? session : undefined;
}

/** Records a use of the session (sessions.ts writes it at most once a minute or so, not per request). */
export async function touchSession(db: Executor, idHash: string, now: Date): Promise<void> {
  await db
    .updateTable('console_sessions')
    .set({ last_seen_at: toDbTime(now) })
    .where('id_hash', '=', idHash)
    .execute();
}

/**
 * Stores refreshed tokens, only if the row still holds `previous`: when two instances refreshed at once,
 * the loser learns it (false) instead of overwriting the winner's newer refresh token.
 */
export async function replaceTokens(
  db: Executor,
  idHash: string,
  previous: string,
  next: { sealedTokens: string; scope: string; accessExpiresAt: Date },
): Promise<boolean> {
  const result = await db
    .updateTable('console_sessions')
    .set({ tokens: next.sealedTokens, scope: next.scope, access_expires_at: toDbTime(next.accessExpiresAt) })
    .where('id_hash', '=', idHash)
    .where('tokens', '=', previous)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deleteSession(db: Executor, idHash: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('id_hash', '=', idHash).execute();
}

/**
 * Sessions past their lifetime or unused since `idleSince`: removed now and then so the table does not
 * grow without bound (an idle one is never found again: sessions.ts).
 */
export async function deleteExpiredSessions(db: Executor, now: Date, idleSince: Date): Promise<void> {
  await db
    .deleteFrom('console_sessions')
    .where((eb) =>
      eb.or([
        eb('expires_at', '<=', toDbTime(now)),
        eb(eb.fn.coalesce('last_seen_at', 'created_at'), '<=', toDbTime(idleSince)),
      ]),
    )
    .execute();
}
