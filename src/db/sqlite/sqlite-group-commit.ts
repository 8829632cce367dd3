// Group commit for the embedded SQLite database: write transactions that arrive together share one
// COMMIT, and so one fsync, instead of paying one each on the single writer connection.
//
// - Each Kysely transaction (and each write statement outside one) is a member of the open group: it
//   runs inside its own SAVEPOINT, so a member that fails (409, 412, 422, an idempotency conflict)
//   rolls back only its own work (https://sqlite.org/lang_savepoint.html). Members run one at a time.
// - The group commits SQLITE_GROUP_COMMIT_WINDOW (1 ms) after its first member finished: the requests
//   that reach their transaction meanwhile join it. A member that is still running is let finish
//   first; members waiting behind it open the next group.
// - No member's result, success or failure, is given back before its group's COMMIT has returned:
//   a client is never told of a write a crash could undo, nor refused on the strength of one. If the
//   COMMIT fails, every member fails with it (a 503 for the clients).
// - Reads outside a transaction go to a second, read-only connection (WAL lets it read while the writer
//   writes), so they see only committed data and never wait for the writer.
import {
  CompiledQuery,
  RawNode,
  SelectQueryNode,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import { BusyWait } from './sqlite-busy.ts';
import type { DirectConnection } from '../direct-read.ts';
import type { NodeSqliteDatabase } from './sqlite-driver.ts';

const SAVEPOINT = 'signet_member';
/** Raw SQL that only reads: a SELECT (or a CTE ending in one) or a PRAGMA that sets nothing. */
const READ_ONLY_SQL = /^\s*(?:select\b|pragma\s+\w+\s*;?\s*$)/i;

export interface GroupCommitTiming {
  /** How long BEGIN IMMEDIATE waits for another process's write lock. */
  busyTimeoutMs: number;
  /** How long the group stays open for more members after the first one finished; 0: to the end of the event-loop turn. */
  windowMs: number;
}

/** Starts checkpointing the file on a thread; returns what stops it (sqlite-checkpointer.ts). */
export type StartCheckpoints = () => () => Promise<void>;

export interface GroupCommitStats {
  /** COMMITs issued for groups that had at least one member. */
  commits: number;
  /** Members (transactions and single write statements) that committed. */
  members: number;
  /** Members rolled back to their own savepoint. */
  rolledBack: number;
}

function execute<R>(db: NodeSqliteDatabase, query: CompiledQuery): QueryResult<R> {
  const statement = db.prepare(query.sql);
  if (statement.reader) return { rows: statement.all(query.parameters) as R[] };
  const { changes, lastInsertRowid } = statement.run(query.parameters);
  return { insertId: BigInt(lastInsertRowid), numAffectedRows: BigInt(changes), rows: [] };
}

function isRead(query: CompiledQuery): boolean {
  if (SelectQueryNode.is(query.query)) return true;
  return RawNode.is(query.query) && READ_ONLY_SQL.test(query.sql);
}

/** A first-come, first-served lock for the writer: one member's SAVEPOINT at a time. */
class Slot {
  #held = false;
  readonly #waiting: Array<() => void> = [];

  get held(): boolean {
    return this.#held;
  }

  async acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#held = false;
  }
}

/** One shared transaction: its members learn together whether it became durable. */
class Group {
  readonly durable: Promise<void>;
  readonly afterCommit: Array<() => void> = [];
  members = 0;
  #resolve!: () => void;
  #reject!: (err: unknown) => void;

  constructor() {
    this.durable = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.durable.catch(() => undefined); // a group whose members all rolled back may have no listener
  }

  committed(): void {
    this.#resolve();
    for (const callback of this.afterCommit.splice(0)) queueMicrotask(callback);
  }

  failed(err: unknown): void {
    this.#reject(err);
  }
}

/** What Kysely holds while it runs a query or a transaction; cheap, one per acquisition. */
export class MemberConnection implements DirectConnection {
  readonly #driver: GroupCommitDriver;
  group: Group | undefined;
  readonly afterCommit: Array<() => void> = [];
  /**
   * Set when a transaction's savepoint has ended. Kysely can still send a statement on it (one queued
   * behind a statement that failed inside Promise.all, run while Kysely rolls back): it must fail, not
   * run outside the savepoint as a write of its own that commits while the transaction reports failure.
   */
  ended = false;

  constructor(driver: GroupCommitDriver) {
    this.#driver = driver;
  }

  get inTransaction(): boolean {
    return this.group !== undefined;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.ended) throw new Error('this transaction has already ended; the statement was not run');
    if (this.group) return this.#driver.write<R>(query);
    if (isRead(query)) return this.#driver.read<R>(query);
    // A write outside a transaction: a member of one statement, on a connection that stays usable.
    await this.#driver.beginTransaction(this);
    try {
      let result: QueryResult<R>;
      try {
        result = this.#driver.write<R>(query);
      } catch (err) {
        await this.#driver.rollbackTransaction(this);
        throw err;
      }
      await this.#driver.commitTransaction(this);
      return result;
    } finally {
      this.ended = false;
    }
  }

  /** executeQuery's write in a transaction, without Kysely (direct-read.ts); undefined: go through Kysely. */
  executeDirect<R>(query: CompiledQuery): QueryResult<R> | undefined {
    return this.group && !this.ended ? this.#driver.write<R>(query) : undefined;
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (this.group || !isRead(query)) throw new Error('only reads outside a transaction can be streamed');
    yield* this.#driver.stream<R>(query);
  }
}

export class GroupCommitDriver implements Driver {
  readonly #writer: NodeSqliteDatabase;
  /** Undefined for ':memory:', where a second connection would open a second, empty database. */
  readonly #reader: NodeSqliteDatabase | undefined;
  readonly #busy: BusyWait;
  readonly #slot = new Slot();
  readonly stats: GroupCommitStats = { commits: 0, members: 0, rolledBack: 0 };
  readonly #windowMs: number;
  #group: Group | undefined;
  #commitScheduled = false;
  #commitWhenFree = false;
  #commitTimer: NodeJS.Timeout | undefined;
  readonly #startCheckpoints: StartCheckpoints | undefined;
  #stopCheckpoints: (() => Promise<void>) | undefined;
  /** Between Kysely's init() and destroy(): only then may a read skip Kysely (readDirect). */
  #open = false;

  /**
   * `startCheckpoints` (sqlite-checkpointer.ts) runs when Kysely first uses the driver, and what it
   * returns once the last group has committed at destroy, before the connections close. Kysely calls
   * destroy() only on a driver it initialised, so starting earlier would leak a file nobody stops.
   */
  constructor(
    writer: NodeSqliteDatabase,
    reader: NodeSqliteDatabase | undefined,
    timing: GroupCommitTiming,
    startCheckpoints?: StartCheckpoints,
  ) {
    this.#writer = writer;
    this.#startCheckpoints = startCheckpoints;
    this.#reader = reader;
    this.#busy = new BusyWait(timing.busyTimeoutMs);
    this.#windowMs = timing.windowMs;
  }

  async init(): Promise<void> {
    this.#stopCheckpoints ??= this.#startCheckpoints?.();
    this.#open = true;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new MemberConnection(this);
  }

  /** Waits for the writer, opens the group if none is open, and starts the member's savepoint. */
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const member = connection as MemberConnection;
    await this.#slot.acquire();
    try {
      // BEGIN IMMEDIATE takes the write lock now (waited for on timers), so no statement inside the
      // group can meet SQLITE_BUSY half way.
      if (!this.#group) await this.#busy.run(() => this.#writer.exec('BEGIN IMMEDIATE'));
      this.#group ??= new Group();
      this.#writer.exec(`SAVEPOINT ${SAVEPOINT}`);
    } catch (err) {
      this.#releaseSlot();
      this.#scheduleCommit(); // a group opened by BEGIN just now must not keep the write lock
      throw err;
    }
    member.group = this.#group;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const group = this.#leave(connection as MemberConnection, true);
    if (group) await group.durable;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // After a failed group commit Kysely rolls back too: the member has already left.
    const group = this.#leave(connection as MemberConnection, false);
    await group?.durable.catch(() => undefined);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const member = connection as MemberConnection;
    if (member.inTransaction) await this.rollbackTransaction(member);
  }

  async destroy(): Promise<void> {
    this.#open = false;
    await this.#slot.acquire();
    clearTimeout(this.#commitTimer);
    if (this.#group) this.#commit();
    await this.#stopCheckpoints?.();
    // The writer closes last: as the file's last connection it checkpoints the WAL and removes it.
    this.#reader?.close();
    this.#writer.close();
    // A transaction that got its connection before Kysely saw the destroy fails on the closed
    // connection instead of waiting for the writer for ever.
    this.#slot.release();
  }

  /**
   * Runs `sqlText` on the writer outside any transaction, for the PRAGMAs SQLite refuses inside one:
   * waits for the writer and commits the open group first (its members are waiting for that anyway).
   */
  async execOutsideTransaction(sqlText: string): Promise<void> {
    await this.#slot.acquire();
    try {
      this.#commit();
      this.#writer.exec(sqlText);
    } finally {
      this.#slot.release();
    }
  }

  /** A member's statement, inside its savepoint. */
  write<R>(query: CompiledQuery): QueryResult<R> {
    // SQLITE_FULL, IOERR or NOMEM can roll back the whole transaction: a member that caught the error
    // and went on would otherwise write outside any transaction, committed at once.
    if (!this.#writer.inTransaction) throw new Error('the shared SQLite transaction was rolled back by an error');
    return execute<R>(this.#writer, query);
  }

  async read<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const reader = this.#reader ?? this.#writer;
    return this.#busy.run(() => execute<R>(reader, query));
  }

  /**
   * read() for a caller that skips Kysely (direct-read.ts); undefined before Kysely's first use and
   * after its destroy, so that the query goes through Kysely: its first use starts the driver (which
   * Kysely destroys only then), and after destroy it refuses the query as it would any other.
   */
  readDirect<R>(query: CompiledQuery): Promise<QueryResult<R>> | undefined {
    return this.#open ? this.read<R>(query) : undefined;
  }

  async *stream<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const reader = this.#reader ?? this.#writer;
    for (const row of reader.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] };
  }

  /** Ends the member's savepoint, hands the writer on, and returns the group it belongs to. */
  #leave(member: MemberConnection, keep: boolean): Group | undefined {
    const group = member.group;
    if (!group) return undefined;
    member.group = undefined;
    member.ended = true;
    const callbacks = member.afterCommit.splice(0);
    try {
      if (keep) this.#writer.exec(`RELEASE ${SAVEPOINT}`);
      else if (this.#writer.inTransaction) this.#writer.exec(`ROLLBACK TO ${SAVEPOINT}; RELEASE ${SAVEPOINT}`);
      if (keep) {
        group.members += 1;
        group.afterCommit.push(...callbacks);
      } else this.stats.rolledBack += 1;
    } catch (err) {
      this.#lose(group, err);
    }
    // Some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) make SQLite roll back the whole
    // transaction, not just the statement: the members before this one lost their work too.
    if (group === this.#group && !this.#writer.inTransaction)
      this.#lose(group, new Error('the shared SQLite transaction was rolled back by an error'));
    this.#releaseSlot();
    this.#scheduleCommit();
    return group;
  }

  #releaseSlot(): void {
    if (this.#commitWhenFree) this.#commit();
    this.#slot.release();
  }

  /**
   * After the window (or at the end of this event-loop turn): requests reach their transaction a few
   * turns after their bytes arrive (body, authentication), so without a window concurrent requests
   * rarely meet in one group. The window is the price in latency of sharing one fsync.
   */
  #scheduleCommit(): void {
    if (!this.#group || this.#commitScheduled) return;
    this.#commitScheduled = true;
    const due = (): void => {
      this.#commitScheduled = false;
      if (this.#slot.held) this.#commitWhenFree = true;
      else this.#commit();
    };
    if (this.#windowMs > 0) this.#commitTimer = setTimeout(due, this.#windowMs);
    else setImmediate(due);
  }

  #commit(): void {
    const group = this.#group;
    this.#commitWhenFree = false;
    if (!group) return;
    this.#group = undefined;
    try {
      this.#writer.exec('COMMIT');
    } catch (err) {
      this.#lose(group, err);
      return;
    }
    if (group.members > 0) this.stats.commits += 1;
    this.stats.members += group.members;
    group.committed();
  }

  #lose(group: Group, err: unknown): void {
    if (group === this.#group) this.#group = undefined;
    try {
      if (this.#writer.inTransaction) this.#writer.exec('ROLLBACK');
    } catch {
      // The connection reports the original error to the members; nothing more to undo.
    }
    group.failed(err);
  }
}
