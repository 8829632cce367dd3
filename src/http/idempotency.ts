// Idempotency-Key for POST (draft-ietf-httpapi-idempotency-key-header): a retried request gets the
// original result instead of a second effect.
//
// 1. Claim: insert (caller, key, fingerprint, in_flight) and commit at once, so a concurrent request
//    with the same key sees it (409 + Retry-After) instead of waiting or running twice.
// 2. Execute the operation in a transaction that also stores the response on the key row: the order
//    and its replayable result commit together or not at all.
// 3. Failures (validation, conflicts) release the claim: only successful results are stored.
// A claim whose process died is taken over once its lock expires.
// On PostgreSQL a write that can be said as one statement (a create) skips the transaction: see WriteUnit.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
  type Driver,
  type Insertable,
  type QueryCreator,
  type RawBuilder,
} from 'kysely';
import type { Db, Executor } from '../db/database.ts';
import type { Database, IdempotencyKeysTable } from '../db/schema.ts';
import { fromDbJson, fromDbTime, toDbJson, toDbTime } from '../db/codecs.ts';
import { Problem, PROBLEM_TYPES } from './problems.ts';

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

type Operation = (trx: Executor) => Promise<StoredResponse>;

// RFC 8941 sf-string (quoted) or a bare token of visible ASCII, 1–255 characters.
const BARE_KEY = /^[\x21-\x7e]{1,255}$/;
const QUOTED_KEY = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\]){1,255})"$/;

export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? undefined : header.trim();
  const quoted = value === undefined ? null : QUOTED_KEY.exec(value);
  if (quoted?.[1]) return quoted[1].replace(/\\(["\\])/g, '$1');
  if (value !== undefined && BARE_KEY.test(value) && !value.startsWith('"')) return value;
  throw new Problem(
    'badRequest',
    'Idempotency-Key must be 1–255 visible ASCII characters (or a quoted structured-field string), sent once',
    {
      errors: [{ pointer: '/headers/idempotency-key', detail: 'invalid key' }],
    },
  );
}

/** RFC 8785-style canonical JSON: members sorted, so key order and whitespace do not change the fingerprint. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body ?? null)}`)
    .digest('base64url');
}

export function sendStored(reply: FastifyReply, stored: StoredResponse, replayed = false): FastifyReply {
  reply.code(stored.status).headers(stored.headers);
  if (replayed) {
    reply.header('idempotent-replayed', 'true');
    reply.server.metrics.idempotencyReplays.inc();
  }
  return reply.send(stored.body === '' ? undefined : stored.body);
}

/** Runs `operation` in a transaction, once per (caller, Idempotency-Key) when the header is present. */
export async function runIdempotent(
  request: FastifyRequest,
  reply: FastifyReply,
  db: Db,
  settings: IdempotencySettings,
  operation: Operation,
): Promise<FastifyReply> {
  try {
    return await runOnce(request, reply, db, settings, operation);
  } catch (err) {
    countConflict(request, err);
    throw err;
  }
}

/** signet_idempotency_conflicts_total (README, "Metrics"): the two answers that refuse a key. */
function countConflict(request: FastifyRequest, err: unknown): void {
  if (!(err instanceof Problem)) return;
  if (err.type === PROBLEM_TYPES.idempotencyKeyInFlight)
    request.server.metrics.idempotencyConflicts.labels('in_flight').inc();
  else if (err.type === PROBLEM_TYPES.idempotencyKeyReused)
    request.server.metrics.idempotencyConflicts.labels('key_reused').inc();
}

async function runOnce(
  request: FastifyRequest,
  reply: FastifyReply,
  db: Db,
  settings: IdempotencySettings,
  operation: Operation,
): Promise<FastifyReply> {
  const key = parseIdempotencyKey(request.headers['idempotency-key']);
  const caller = request.principal?.callerKey ?? `ip:${request.clientOrigin.ip}`;
  const fingerprint =
    key === undefined ? '' : requestFingerprint(request.method, request.url.split('?')[0] ?? '', request.body);
  let held: Ownership | undefined;
  if (!settings.singleWriter && db.getExecutor().adapter instanceof PostgresAdapter) {
    const outcome = await runAsStatement(
      db,
      settings,
      key === undefined ? undefined : { caller, key, fingerprint },
      operation,
    );
    if ('stored' in outcome) return sendStored(reply, outcome.stored, outcome.replayed);
    held = outcome.held; // the operation queried the database itself: it runs in a transaction after all
  }
  if (key === undefined) return sendStored(reply, await db.transaction().execute(operation));
  if (settings.singleWriter) {
    const outcome = await db.transaction().execute(async (trx) => {
      const claimed = await claim(trx, settings, { caller, key, fingerprint });
      if ('replay' in claimed) return { stored: claimed.replay, replayed: true };
      return {
        stored: await runAndStore(trx, operation, { caller, key, lockedUntil: claimed.lockedUntil }),
        replayed: false,
      };
    });
    return sendStored(reply, outcome.stored, outcome.replayed);
  }
  let ours = held;
  if (ours === undefined) {
    const claimed = await claim(db, settings, { caller, key, fingerprint });
    if ('replay' in claimed) return sendStored(reply, claimed.replay, true);
    ours = { caller, key, lockedUntil: claimed.lockedUntil };
  }
  // Every write below is conditional on still holding the lock we took: a request that outlived its
  // lock and was taken over must neither commit its result nor release the new owner's claim.
  const owned = ours;
  try {
    return sendStored(reply, await db.transaction().execute((trx) => runAndStore(trx, operation, owned)));
  } catch (err) {
    await release(db, owned);
    throw err;
  }
}

function release(db: Executor, ours: Ownership): Promise<unknown> {
  return whileOwned(db.deleteFrom('idempotency_keys'), ours).execute();
}

/** Runs the operation and stores its response on the key row, in the caller's transaction. */
async function runAndStore(trx: Executor, operation: Operation, ours: Ownership): Promise<StoredResponse> {
  const result = await operation(trx);
  const saved = await whileOwned(trx.updateTable('idempotency_keys'), ours)
    .set({
      state: 'done',
      response_status: result.status,
      response_headers: toDbJson(result.headers),
      response_body: result.body,
    })
    .executeTakeFirst();
  if (Number(saved.numUpdatedRows) !== 1) throw inFlight(await currentLock(trx, ours)); // rolls the operation back
  return result;
}

/** The lock of whichever request took the key over from us, if it still holds it. */
async function currentLock(db: Executor, ours: Ownership): Promise<Date | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select('locked_until')
    .where('caller', '=', ours.caller)
    .where('key', '=', ours.key)
    .where('state', '=', 'in_flight')
    .executeTakeFirst();
  return row && fromDbTime(row.locked_until);
}

interface Ownership {
  caller: string;
  key: string;
  lockedUntil: string;
}

// Narrow structural type: both UPDATE and DELETE builders offer `where` with these columns.
interface KeyFilterable<T> {
  where(column: 'caller' | 'key' | 'state' | 'locked_until', op: '=', value: string): T;
}

function whileOwned<T extends KeyFilterable<T>>(query: T, ours: Ownership): T {
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
function inFlight(lockedUntil?: Date, now = new Date()): Problem {
  const seconds = lockedUntil ? Math.max(1, Math.ceil((lockedUntil.getTime() - now.getTime()) / 1000)) : 1;
  return new Problem(
    'idempotencyKeyInFlight',
    `the first request with this key has not finished; retry in ${seconds} s`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

interface KeyId {
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
async function claim(
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

type KeyRow = Insertable<IdempotencyKeysTable>;

/** The claim's INSERT, which does nothing when the key exists; with `reserve`, also that value (one statement). */
async function insertClaim(
  db: Executor,
  row: KeyRow,
  reserve?: RawBuilder<unknown>,
): Promise<{ reserved?: unknown } | undefined> {
  const insert = (qc: QueryCreator<Database>) =>
    qc
      .insertInto('idempotency_keys')
      .values(row)
      .onConflict((oc) => oc.columns(['caller', 'key']).doNothing());
  if (reserve === undefined) {
    const inserted = await insert(db).executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1 ? {} : undefined;
  }
  const claimed = await db
    .with('claim', (qc) => insert(qc).returning('caller'))
    .selectFrom('claim')
    .select(reserve.as('reserved'))
    .executeTakeFirst();
  return claimed && { reserved: claimed.reserved };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a write in one statement (issue 17)
// ---------------------------------------------------------------------------------------------

/** Data-modifying CTEs that a write hands its WriteUnit, to go out with the statement storing its response. */
export interface StatementWrite {
  /** Written only for the row of the CTE named `gate`, which has none when the key was taken over meanwhile. */
  ctes(gate: string): RawBuilder<unknown>;
  /** Evaluated once after the CTEs (a NOTIFY, say). */
  after?: RawBuilder<unknown>;
}

/**
 * What runIdempotent offers an operation on PostgreSQL before any transaction. A write that can be said
 * as one statement first asks for the values it needs (reserve: an id from a sequence), then defers the
 * rest (defer). The deferred write goes out in ONE autocommit statement with the update that stores the
 * response on the key, gated on still owning it: atomic without BEGIN and COMMIT, as a statement is its
 * own transaction and the data-modifying statements in its WITH commit together or not at all
 * (PostgreSQL docs, 7.8.4 "Data-Modifying Statements in WITH"). The first reserve() goes with the key's
 * claim, which commits on its own as before: a concurrent duplicate still sees it (409 in flight).
 *
 * Any query the operation runs itself is refused before it reaches a connection, and the operation is
 * run again in a transaction, as without a unit (keeping the claim it may hold): an operation passed to
 * runIdempotent must have no effect outside the database before its first query.
 */
export interface WriteUnit {
  reserve<T>(value: RawBuilder<T>): Promise<T>;
  defer(write: StatementWrite): void;
}

const units = new WeakMap<object, StatementUnit>();

/** The WriteUnit behind the executor runIdempotent passed an operation, if it is one. */
export function writeUnitOf(executor: Executor): WriteUnit | undefined {
  return units.get(executor);
}

/** An operation's own query, refused: it runs in a transaction instead. */
class NeedsTransaction extends Error {}

/** The key was already answered: its response is replayed and the operation goes no further. */
class KeyAnswered extends Error {
  readonly stored: StoredResponse;
  constructor(stored: StoredResponse) {
    super('replayed');
    this.stored = stored;
  }
}

const PG_ADAPTER = new PostgresAdapter();
const PG_COMPILER = new PostgresQueryCompiler();

/** A Kysely that compiles PostgreSQL and sends nothing: every query calls `onQuery`, then fails. */
function refusingExecutor(onQuery: () => void): Db {
  const refuse = async (): Promise<never> => {
    onQuery();
    throw new NeedsTransaction('this operation queries the database itself; it runs in a transaction');
  };
  const idle = async (): Promise<void> => undefined;
  const driver: Driver = {
    init: idle,
    acquireConnection: refuse,
    beginTransaction: refuse,
    commitTransaction: refuse,
    rollbackTransaction: refuse,
    releaseConnection: idle,
    destroy: idle,
  };
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => PG_ADAPTER,
      createDriver: () => driver,
      createQueryCompiler: () => PG_COMPILER,
      createIntrospector: (db) => new PostgresIntrospector(db),
    },
  });
}

class StatementUnit implements WriteUnit {
  readonly executor: Db;
  /** The operation ran a query of its own (even if it caught the refusal): it needs a transaction. */
  refused = false;
  /** The lock this request holds on its key, once claimed. */
  held: Ownership | undefined;
  write: StatementWrite | undefined;
  readonly #db: Db;
  readonly #settings: IdempotencySettings;
  readonly #id: KeyId | undefined;
  #claimed = false;

  constructor(db: Db, settings: IdempotencySettings, id: KeyId | undefined) {
    this.#db = db;
    this.#settings = settings;
    this.#id = id;
    this.executor = refusingExecutor(() => {
      this.refused = true;
    });
    units.set(this.executor, this);
  }

  /** Whether the key still has to be claimed (a request with a key, before its first reserve). */
  get unclaimed(): boolean {
    return this.#id !== undefined && !this.#claimed;
  }

  async reserve<T>(value: RawBuilder<T>): Promise<T> {
    if (this.unclaimed) {
      const claimed = await this.claim(value);
      if ('reserved' in claimed) return claimed.reserved as T;
    }
    const { rows } = await sql<{ value: T }>`select ${value} as value`.execute(this.#db);
    return rows[0]!.value;
  }

  defer(write: StatementWrite): void {
    if (this.write) throw new Error('one statement per request: a second write cannot be deferred');
    this.write = write;
  }

  /** Claims the key (throwing its answer when it is not free: KeyAnswered, or a 409 problem). */
  async claim(reserve?: RawBuilder<unknown>): Promise<{ reserved?: unknown }> {
    const id = this.#id!;
    this.#claimed = true;
    const claimed = await claim(this.#db, this.#settings, id, 0, reserve);
    if ('replay' in claimed) throw new KeyAnswered(claimed.replay);
    this.held = { caller: id.caller, key: id.key, lockedUntil: claimed.lockedUntil };
    return claimed;
  }

  /** The deferred write and the key's result in one statement; a key taken over meanwhile writes nothing. */
  async store(result: StoredResponse): Promise<void> {
    if (!this.held && !this.write) return;
    const { rows } = await storingStatement(this.held, result, this.write).execute(this.#db);
    if (this.held && rows[0]?.owned !== 1) throw inFlight(await currentLock(this.#db, this.held));
  }
}

function storingStatement(
  ours: Ownership | undefined,
  result: StoredResponse,
  write: StatementWrite | undefined,
): RawBuilder<{ owned: number }> {
  const gate = ours
    ? sql`update idempotency_keys
        set state = 'done', response_status = ${result.status}, response_headers = ${toDbJson(result.headers)},
          response_body = ${result.body}
        where caller = ${ours.caller} and "key" = ${ours.key} and state = 'in_flight'
          and locked_until = ${ours.lockedUntil}
        returning 1`
    : sql`select 1`;
  const ctes = write ? sql`, ${write.ctes('idempotency_gate')}` : sql``;
  const after = write?.after ? sql`, ${write.after} as after` : sql``;
  return sql`with idempotency_gate as (${gate})${ctes}
    select (select count(*) from idempotency_gate)::int as owned${after}`;
}

type StatementOutcome = { stored: StoredResponse; replayed: boolean } | { held: Ownership | undefined };

/**
 * Runs `operation` with a WriteUnit. Its answer, or, when it queried the database itself, what the
 * transactional path needs to run it again: the claim it already holds, if any.
 */
async function runAsStatement(
  db: Db,
  settings: IdempotencySettings,
  id: KeyId | undefined,
  operation: Operation,
): Promise<StatementOutcome> {
  const unit = new StatementUnit(db, settings, id);
  try {
    const result = await operation(unit.executor);
    if (unit.refused) return { held: unit.held };
    if (unit.unclaimed) await unit.claim(); // it never reached the database: claim before storing
    await unit.store(result);
    return { stored: result, replayed: false };
  } catch (err) {
    if (err instanceof KeyAnswered) return { stored: err.stored, replayed: true };
    if (unit.refused) return { held: unit.held };
    // The key's answer (a replay, 409) comes before the operation's failure, as when it is claimed first.
    if (unit.unclaimed) return claimThenFail(unit, db, err);
    if (unit.held) await release(db, unit.held);
    throw err;
  }
}

async function claimThenFail(unit: StatementUnit, db: Db, failure: unknown): Promise<StatementOutcome> {
  try {
    await unit.claim();
  } catch (err) {
    if (err instanceof KeyAnswered) return { stored: err.stored, replayed: true };
    throw err;
  }
  await release(db, unit.held!);
  throw failure;
}

/** Keys deleted per statement by purgeExpiredKeys. */
export const KEY_PURGE_BATCH = 500;

/**
 * Deletes expired keys; returns how many. Run periodically by the app. In batches of `batchSize`,
 * oldest first (idempotency_keys_expires_idx), yielding to the event loop between them: a backlog
 * (a day of keys after an outage) never holds the writer (SQLite runs a statement on the event loop,
 * under its single write lock) for longer than one batch. Each batch starts where the last one ended
 * (`expires_at >= mark`): on PostgreSQL the deleted rows stay in the index until VACUUM, and a scan
 * from the start would step over all of them again in every batch.
 */
export async function purgeExpiredKeys(db: Db, now: Date, batchSize = KEY_PURGE_BATCH): Promise<number> {
  let total = 0;
  let mark: string | Date | undefined;
  for (;;) {
    let expired = db
      .selectFrom('idempotency_keys')
      .select(['caller', 'key'])
      .where('expires_at', '<=', toDbTime(now))
      .orderBy('expires_at')
      .limit(batchSize);
    if (mark !== undefined) expired = expired.where('expires_at', '>=', mark);
    // A row value IN a subquery: SQLite 3.15+ (https://sqlite.org/rowvalue.html) and PostgreSQL.
    const deleted = await db
      .deleteFrom('idempotency_keys')
      .where(({ eb, refTuple }) => eb(refTuple('caller', 'key'), 'in', expired.$asTuple('caller', 'key')))
      .returning('expires_at')
      .execute();
    total += deleted.length;
    if (deleted.length < batchSize) return total;
    mark = deleted.map((row) => row.expires_at).reduce(latest);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The later of two stored times (ISO text on SQLite, a Date on PostgreSQL). */
function latest<T extends string | Date>(a: T, b: T): T {
  return fromDbTime(a) >= fromDbTime(b) ? a : b;
}
