// PostgreSQL: an idempotent write in one autocommit statement, one round trip
// (docs/benchmarks-history.md, "PostgreSQL creates in one round trip"). A create takes its order's id
// (shared with the creates running at the same time, src/db/postgres/sequence-reservations.ts) and then sends one
// statement that claims its key and writes the order, its event, its deliveries and the key's stored
// response, instead of BEGIN, six statements and COMMIT.
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
  type Driver,
  type RawBuilder,
} from 'kysely';
import type { Db, Executor } from '../db/executor.ts';
import type { Database } from '../db/schema.ts';
import { compiledStatement, type AnyParam, type ParamOf } from '../db/compiled-statement.ts';
import { reservationsOf } from '../db/postgres/sequence-reservations.ts';
import { claimOrRelease, releaseAfterFailure } from './idempotency-release.ts';
import {
  answerWhileOwned,
  currentLock,
  inFlight,
  keyAnswerValues,
  keyClaimedWithAnswer,
  type IdempotencySettings,
  type KeyAnswerValues,
  type KeyId,
  type Operation,
  type Ownership,
  type StoredResponse,
} from './idempotency-keys.ts';

/**
 * Data-modifying CTEs that a write hands its WriteUnit, to go out with the statement storing its response:
 * a shape built from named parameters (one object per kind of write, so that the statement is built and
 * compiled once, compiled-statement.ts) and this write's values. Value names must not start with `key_`
 * (the key's own: KeyAnswerValues).
 */
interface StatementWrite {
  shape: StatementWriteShape;
  values: object;
}

export interface StatementWriteShape {
  /** Written only for the row of the CTE named `gate`, which has none when the key is not ours. */
  ctes(gate: string, param: AnyParam): RawBuilder<unknown>;
  /** Evaluated once after the CTEs (a NOTIFY, say). */
  after?(param: AnyParam): RawBuilder<unknown>;
}

/**
 * What runIdempotent offers an operation on PostgreSQL before any transaction. A write that can be said
 * as one statement first asks for the values it needs (reserve: an id from a sequence), then defers the
 * rest (defer). The deferred write goes out in ONE autocommit statement with the key's claim and its
 * stored response, gated on that claim: atomic without BEGIN and COMMIT, as a statement is its own
 * transaction and the data-modifying statements in its WITH commit together or not at all (PostgreSQL
 * docs, 7.8.4 "Data-Modifying Statements in WITH"). No claim is committed on its own, so there is no
 * in-flight window: a concurrent duplicate's statement waits on the first one's key row (its unique
 * index entry) and, once that has committed, is answered with the replay, as on SQLite.
 *
 * Any query the operation runs itself is refused before it reaches a connection, and the operation is
 * run again in a transaction, as without a unit (its key not yet claimed: the claim goes with the write):
 * an operation passed to runIdempotent must have no effect outside the database before its first query.
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

  /** Whether the key still has to be claimed (a request with a key, before its claim is sent). */
  get unclaimed(): boolean {
    return this.#id !== undefined && !this.#claimed;
  }

  /** `value` must give a new value each time it is evaluated (nextval): see reservationsOf. */
  reserve<T>(value: RawBuilder<T>): Promise<T> {
    return reservationsOf(this.#db, value).take();
  }

  defer(write: StatementWrite): void {
    if (this.write) throw new Error('one statement per request: a second write cannot be deferred');
    this.write = write;
  }

  /** Claims the key (throwing its answer when it is not free: KeyAnswered, or a 409 problem). */
  async claim(): Promise<void> {
    const id = this.#id!;
    this.#claimed = true;
    const claimed = await claimOrRelease(this.#db, this.#settings, id);
    if ('replay' in claimed) throw new KeyAnswered(claimed.replay);
    this.held = { caller: id.caller, key: id.key, lockedUntil: claimed.lockedUntil };
  }

  /**
   * The key's claim with its answer, the deferred write, in one statement. When the key is not free
   * (answered, another request's claim, another body) the statement writes nothing, and the key's own
   * rules then say what to answer (claim: a replay or a 409), or, if it was freed in between, claim it
   * and store as below.
   */
  async claimAndStore(result: StoredResponse): Promise<void> {
    const id = this.#id!;
    this.#claimed = true; // a failed statement claimed nothing: its error is the answer, with nothing to release
    const { rows } = await runStoring(this.#db, 'claim', this.write, keyAnswerValues(id, result, this.#settings));
    if (rows[0]?.owned === 1) return;
    await this.claim();
    await this.store(result);
  }

  /** The deferred write and the key's result in one statement; a key taken over meanwhile writes nothing. */
  async store(result: StoredResponse): Promise<void> {
    if (!this.held && !this.write) return;
    const keyValues = this.held && keyAnswerValues(this.#id!, result, this.#settings, this.held);
    const { rows } = await runStoring(this.#db, this.held ? 'owned' : 'none', this.write, keyValues);
    if (this.held && rows[0]?.owned !== 1) throw inFlight(await currentLock(this.#db, this.held));
  }
}

/**
 * The statement a write goes out in, gated: `claim`, the key claimed with its answer (a create's key);
 * `owned`, the answer stored on the claim we hold; `none`, no key. The gate returns one row when the
 * write may go ahead, and the write is gated on that row.
 */
type Gate = 'claim' | 'owned' | 'none';

const GATES: Record<Gate, (param: ParamOf<KeyAnswerValues>) => RawBuilder<unknown>> = {
  claim: keyClaimedWithAnswer,
  owned: answerWhileOwned,
  none: () => sql`select 1`,
};

type Storing = ReturnType<typeof storingStatementOf>;

/** Per write shape, the compiled statement of each gate; NO_WRITE stands for a request that deferred none. */
const storingStatements = new WeakMap<object, Map<Gate, Storing>>();
const NO_WRITE = {};

function storingStatementOf(gate: Gate, shape: StatementWriteShape | undefined) {
  return compiledStatement<object, { owned: number }>((db, param) => {
    const ctes = shape ? sql`, ${shape.ctes('idempotency_gate', param)}` : sql``;
    const after = shape?.after ? sql`, ${shape.after(param)} as after` : sql``;
    const keyGate = GATES[gate](param as ParamOf<KeyAnswerValues>);
    const statement = sql<{ owned: number }>`with idempotency_gate as (${keyGate})${ctes}
      select (select count(*) from idempotency_gate)::int as owned${after}`;
    return { compile: () => statement.compile(db) };
  });
}

function runStoring(db: Db, gate: Gate, write: StatementWrite | undefined, keyValues: KeyAnswerValues | undefined) {
  const shapeKey = write?.shape ?? NO_WRITE;
  let byGate = storingStatements.get(shapeKey);
  if (!byGate) storingStatements.set(shapeKey, (byGate = new Map()));
  let storing = byGate.get(gate);
  if (!storing) byGate.set(gate, (storing = storingStatementOf(gate, write?.shape)));
  return storing(db, { ...keyValues, ...write?.values });
}

/** `needsTransaction`: the operation queried the database itself (before any claim was sent). */
type StatementOutcome = { stored: StoredResponse; replayed: boolean } | { needsTransaction: true };

/**
 * Runs `operation` with a WriteUnit. Its answer, or, when it queried the database itself, that it must
 * run in a transaction instead (nothing claimed yet).
 */
export async function runAsStatement(
  db: Db,
  settings: IdempotencySettings,
  id: KeyId | undefined,
  operation: Operation,
): Promise<StatementOutcome> {
  const unit = new StatementUnit(db, settings, id);
  try {
    const result = await operation(unit.executor);
    if (unit.refused) return { needsTransaction: true };
    if (unit.unclaimed) await unit.claimAndStore(result);
    else await unit.store(result);
    return { stored: result, replayed: false };
  } catch (err) {
    if (err instanceof KeyAnswered) return { stored: err.stored, replayed: true };
    if (unit.refused) return { needsTransaction: true };
    // The key's answer (a replay, 409) comes before the operation's failure, as when it is claimed first.
    if (unit.unclaimed) return claimThenFail(unit, db, err);
    if (unit.held) throw await releaseAfterFailure(db, unit.held, err);
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
  throw await releaseAfterFailure(db, unit.held!, failure);
}
