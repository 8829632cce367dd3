// Idempotency-Key rows (draft-ietf-httpapi-idempotency-key-header): claiming a key, taking over one whose
// owner died, releasing it, and the 409 that answers a key still in flight. Used by idempotency.ts (the
// request flow) and idempotency-statement.ts (the one-statement write on PostgreSQL).
import type { Insertable, QueryCreator, RawBuilder } from 'kysely';
import type { Executor } from '../db/database.ts';
import type { Database, IdempotencyKeysTable } from '../db/schema.ts';
import { fromDbJson, fromDbTime, toDbTime } from '../db/codecs.ts';
import { compiledStatement, placeholderRow, type ParamOf } from '../db/compiled-statement.ts';
import { Problem } from './problems.ts';

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface IdempotencySettings {
  ttlSeconds: number;
  lockSeconds: number;
  /**
   * True on SQLite: the database runs one write transaction at a time, so no other request can see
   * the key between claim and result; claiming inside the operation's transaction saves a commit.
   */
  singleWriter: boolean;
}

export type Operation = (trx: Executor) => Promise<StoredResponse>;

export function release(db: Executor, ours: Ownership): Promise<unknown> {
  return whileOwned(db.deleteFrom('idempotency_keys'), ours).execute();
}

/** The lock of whichever request took the key over from us, if it still holds it. */
export async function currentLock(db: Executor, ours: Ownership): Promise<Date | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select('locked_until')
    .where('caller', '=', ours.caller)
    .where('key', '=', ours.key)
    .where('state', '=', 'in_flight')
    .executeTakeFirst();
  return row && fromDbTime(row.locked_until);
}

export interface Ownership {
  caller: string;
  key: string;
  lockedUntil: string;
}

// Narrow structural type: both UPDATE and DELETE builders offer `where` with these columns.
interface KeyFilterable<T> {
  where(column: 'caller' | 'key' | 'state' | 'locked_until', op: '=', value: string): T;
}

export function whileOwned<T extends KeyFilterable<T>>(query: T, ours: Ownership): T {
  return query
    .where('caller', '=', ours.caller)
    .where('key', '=', ours.key)
    .where('state', '=', 'in_flight')
    .where('locked_until', '=', ours.lockedUntil);
}

/**
 * 409 while another request holds the key. Retry-After is the time left on its lock (whole seconds,
 * rounded up, at least 1): by then the key has either been answered (the retry replays it) or been
 * abandoned by a crashed request (the retry takes it over). A constant 1 sent clients back every
 * second for the whole lock after a crash.
 */
export function inFlight(lockedUntil?: Date, now = new Date()): Problem {
  const seconds = lockedUntil ? Math.max(1, Math.ceil((lockedUntil.getTime() - now.getTime()) / 1000)) : 1;
  return new Problem(
    'idempotencyKeyInFlight',
    `the first request with this key has not finished; retry in ${seconds} s`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

export interface KeyId {
  caller: string;
  key: string;
  fingerprint: string;
}

/** `reserved`: the value asked for with the claim, when the claim's own INSERT computed it. */
type Claim = { replay: StoredResponse } | { lockedUntil: string; reserved?: unknown };

/**
 * Either a stored response to replay, or the lock this request now holds on the key. `reserve` (PostgreSQL):
 * a value the operation needs, computed by the claim's INSERT when it claims the key (one round trip).
 */
export async function claim(
  db: Executor,
  settings: IdempotencySettings,
  id: KeyId,
  attempt = 0,
  reserve?: RawBuilder<unknown>,
): Promise<Claim> {
  const now = new Date();
  const lockedUntil = toDbTime(new Date(now.getTime() + settings.lockSeconds * 1000));
  const inserted = await insertClaim(
    db,
    {
      ...id,
      state: 'in_flight',
      locked_until: lockedUntil,
      created_at: toDbTime(now),
      expires_at: toDbTime(new Date(now.getTime() + settings.ttlSeconds * 1000)),
    },
    reserve,
  );
  if (inserted) return { lockedUntil, ...inserted };

  const row = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('caller', '=', id.caller)
    .where('key', '=', id.key)
    .executeTakeFirst();
  // Released meanwhile: try to claim again. Never report ownership without a row we inserted or took
  // over: the operation would then run unguarded, next to the request that does own the key.
  if (!row) {
    if (attempt < 2) return claim(db, settings, id, attempt + 1, reserve);
    throw inFlight();
  }
  if (fromDbTime(row.expires_at) <= now) {
    await db
      .deleteFrom('idempotency_keys')
      .where('caller', '=', id.caller)
      .where('key', '=', id.key)
      .where('expires_at', '=', row.expires_at)
      .execute();
    return claim(db, settings, id, attempt + 1, reserve);
  }
  if (row.fingerprint !== id.fingerprint) {
    throw new Problem(
      'idempotencyKeyReused',
      'this Idempotency-Key was already used with a different method, path or body; use a new key for a new request',
    );
  }
  if (row.state === 'done') {
    return {
      replay: {
        status: row.response_status ?? 200,
        headers: fromDbJson<Record<string, string>>(row.response_headers) ?? {},
        body: row.response_body ?? '',
      },
    };
  }
  if (fromDbTime(row.locked_until) > now || attempt >= 2) throw inFlight(fromDbTime(row.locked_until), now);
  // The owner died without finishing: take the claim over, unless another request just did.
  const taken = await db
    .updateTable('idempotency_keys')
    .set({ locked_until: lockedUntil })
    .where('caller', '=', id.caller)
    .where('key', '=', id.key)
    .where('state', '=', 'in_flight')
    .where('locked_until', '=', row.locked_until)
    .executeTakeFirst();
  return Number(taken.numUpdatedRows) === 1 ? { lockedUntil } : claim(db, settings, id, attempt + 1, reserve);
}

type KeyRow = KeyId & Pick<Insertable<IdempotencyKeysTable>, 'state' | 'locked_until' | 'created_at' | 'expires_at'>;

const KEY_COLUMNS = ['caller', 'key', 'fingerprint', 'state', 'locked_until', 'created_at', 'expires_at'] as const;

/** The claim's INSERT, with a placeholder for each of the key row's columns; nothing when the key exists. */
function claimInsert(qc: QueryCreator<Database>, param: ParamOf<KeyRow>) {
  return qc
    .insertInto('idempotency_keys')
    .values(placeholderRow(param, KEY_COLUMNS))
    .onConflict((oc) => oc.columns(['caller', 'key']).doNothing());
}

/** Every claim's INSERT, compiled once (src/db/compiled-statement.ts). */
const insertClaimRow = compiledStatement<KeyRow, unknown>((db, param) => claimInsert(db, param));

type ReservingClaim = ReturnType<typeof reservingClaimOf>;

/**
 * The claim's INSERT that also evaluates `reserve`, compiled once per reserved value (the same object each
 * time). PostgreSQL only (a WriteUnit's reserve): its top node is a SELECT, which the SQLite driver would
 * send to its read-only connection, and SQLite has no INSERT inside WITH anyway.
 */
const reservingClaims = new WeakMap<RawBuilder<unknown>, ReservingClaim>();

function reservingClaimOf(reserve: RawBuilder<unknown>) {
  return compiledStatement<KeyRow, { reserved: unknown }>((db, param) =>
    db
      .with('claim', (qc) => claimInsert(qc, param).returning('caller'))
      .selectFrom('claim')
      .select(reserve.as('reserved')),
  );
}

/** The claim's INSERT, which does nothing when the key exists; with `reserve`, also that value (one statement). */
async function insertClaim(
  db: Executor,
  row: KeyRow,
  reserve?: RawBuilder<unknown>,
): Promise<{ reserved?: unknown } | undefined> {
  if (reserve === undefined) {
    const inserted = await insertClaimRow(db, row);
    return Number(inserted.numAffectedRows ?? 0) === 1 ? {} : undefined;
  }
  let claimWith = reservingClaims.get(reserve);
  if (!claimWith) reservingClaims.set(reserve, (claimWith = reservingClaimOf(reserve)));
  const { rows } = await claimWith(db, row);
  return rows[0] && { reserved: rows[0].reserved };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a write in one statement (issue 17)
// ---------------------------------------------------------------------------------------------
