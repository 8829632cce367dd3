// Idempotency-Key rows (draft-ietf-httpapi-idempotency-key-header): claiming a key, taking over one whose
// owner died, releasing it, and the 409 that answers a key still in flight. Used by idempotency.ts (the
// request flow) and idempotency-statement.ts (the one-statement write on PostgreSQL).
import { sql, type Insertable, type QueryCreator, type RawBuilder } from 'kysely';
import type { Executor } from '../db/executor.ts';
import type { Database, IdempotencyKeysTable } from '../db/schema.ts';
import { fromDbJson, fromDbTime, toDbJson, toDbTime } from '../db/codecs.ts';
import { compiledStatement, placeholderRow, type ParamOf } from '../db/compiled-statement.ts';
import { Problem } from '../http/problems/problems.ts';

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

export type Claim = { replay: StoredResponse } | { lockedUntil: string };

/** The lock a claim made now would hold: `IDEMPOTENCY_LOCK_SECONDS` from now. */
export function newLock(settings: IdempotencySettings, now = new Date()): string {
  return toDbTime(new Date(now.getTime() + settings.lockSeconds * 1000));
}

/**
 * Either a stored response to replay, or the lock this request now holds on the key. `lockedUntil` is
 * chosen by the caller, so that a claim whose answer was lost with its connection (committed or not)
 * can still be released: its row, if any, holds exactly that lock (idempotency-release.ts).
 */
export async function claim(
  db: Executor,
  settings: IdempotencySettings,
  id: KeyId,
  lockedUntil = newLock(settings),
  attempt = 0,
): Promise<Claim> {
  const now = new Date();
  const inserted = await insertClaimRow(db, {
    ...id,
    state: 'in_flight',
    locked_until: lockedUntil,
    created_at: toDbTime(now),
    expires_at: toDbTime(new Date(now.getTime() + settings.ttlSeconds * 1000)),
  });
  if (Number(inserted.numAffectedRows ?? 0) === 1) return { lockedUntil };

  const row = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('caller', '=', id.caller)
    .where('key', '=', id.key)
    .executeTakeFirst();
  // Released meanwhile: try to claim again. Never report ownership without a row we inserted or took
  // over: the operation would then run unguarded, next to the request that does own the key.
  if (!row) {
    if (attempt < 2) return claim(db, settings, id, lockedUntil, attempt + 1);
    throw inFlight();
  }
  if (fromDbTime(row.expires_at) <= now) {
    await db
      .deleteFrom('idempotency_keys')
      .where('caller', '=', id.caller)
      .where('key', '=', id.key)
      .where('expires_at', '=', row.expires_at)
      .execute();
    return claim(db, settings, id, lockedUntil, attempt + 1);
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
  return Number(taken.numUpdatedRows) === 1 ? { lockedUntil } : claim(db, settings, id, lockedUntil, attempt + 1);
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

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a write in one statement, one round trip (docs/operations/postgresql.md)
// ---------------------------------------------------------------------------------------------

/**
 * The key's row, already answered, for a write that claims its key in its own statement: inserted, or
 * taking the place of a row that no longer counts, which are claim()'s rules: an expired key (any body),
 * or the claim of a request with the same body whose lock has passed (it died). Returns its row only
 * then; otherwise (answered, another request's live claim, another body) it changes nothing, and claim()
 * says what to answer. An uncommitted row of a concurrent request with the same key is waited for (the
 * unique index), so two such statements never both write.
 */
export function keyClaimedWithAnswer(param: ParamOf<KeyAnswerValues>): RawBuilder<unknown> {
  const at = param('key_at');
  return sql`insert into idempotency_keys as k (caller, "key", fingerprint, state, locked_until, created_at,
      expires_at, response_status, response_headers, response_body)
    values (${param('key_caller')}, ${param('key_key')}, ${param('key_fingerprint')}, 'done', ${at}, ${at},
      ${param('key_expires_at')}, ${param('key_status')}, ${param('key_headers')}, ${param('key_body')})
    on conflict (caller, "key") do update set fingerprint = excluded.fingerprint, state = 'done',
      locked_until = excluded.locked_until, created_at = excluded.created_at, expires_at = excluded.expires_at,
      response_status = excluded.response_status, response_headers = excluded.response_headers,
      response_body = excluded.response_body
    where k.expires_at <= ${at}
      or (k.state = 'in_flight' and k.locked_until <= ${at} and k.fingerprint = excluded.fingerprint)
    returning 1`;
}

/** The key's answer, on the claim we hold (none if it was taken over meanwhile). */
export function answerWhileOwned(param: ParamOf<KeyAnswerValues>): RawBuilder<unknown> {
  return sql`update idempotency_keys
    set state = 'done', response_status = ${param('key_status')}, response_headers = ${param('key_headers')},
      response_body = ${param('key_body')}
    where caller = ${param('key_caller')} and "key" = ${param('key_key')} and state = 'in_flight'
      and locked_until = ${param('key_locked_until')}
    returning 1`;
}

/**
 * The values of keyClaimedWithAnswer and answerWhileOwned: the key, the answer to store on it, and
 * either the times of a new claim or the lock we hold (`ours`).
 */
export interface KeyAnswerValues {
  key_caller: string;
  key_key: string;
  key_fingerprint: string;
  key_at: string;
  key_expires_at: string;
  key_locked_until: string;
  key_status: number;
  key_headers: string;
  key_body: string;
}

export function keyAnswerValues(
  id: KeyId,
  answer: StoredResponse,
  settings: IdempotencySettings,
  ours?: Ownership,
): KeyAnswerValues {
  const now = new Date();
  const at = toDbTime(now);
  return {
    key_caller: id.caller,
    key_key: id.key,
    key_fingerprint: id.fingerprint,
    key_at: at,
    key_expires_at: toDbTime(new Date(now.getTime() + settings.ttlSeconds * 1000)),
    key_locked_until: ours?.lockedUntil ?? at,
    key_status: answer.status,
    key_headers: toDbJson(answer.headers),
    key_body: answer.body,
  };
}
