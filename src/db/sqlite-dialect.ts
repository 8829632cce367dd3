// Kysely's SqliteDialect, with the wait for another process's write lock taken off the event loop.
// node:sqlite is synchronous: with PRAGMA busy_timeout, a write that finds the database locked (by
// `signet migrate`, an admin command, a `signet dispatcher`, a backup) freezes the whole process while
// it waits, /healthz and /readyz included, and every queued write freezes it again. Here the
// connection's own busy_timeout is 0; a statement that gets SQLITE_BUSY is retried on a timer until
// SQLITE_BUSY_TIMEOUT has passed, and then fails as a 503 with Retry-After (src/http/outage.ts).
import {
  CompiledQuery,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import type { NodeSqliteDatabase } from './sqlite-driver.ts';

const FIRST_RETRY_MS = 2;
const LONGEST_RETRY_MS = 50;
/** node:sqlite's errcode for SQLITE_BUSY exactly: BUSY_SNAPSHOT (517) and the like never clear by waiting. */
const SQLITE_BUSY = 5;

function isBusy(err: unknown): boolean {
  return (
    (err as { code?: unknown; errcode?: unknown } | null)?.code === 'ERR_SQLITE_ERROR' &&
    (err as { errcode?: unknown }).errcode === SQLITE_BUSY
  );
}

export class NodeSqliteDialect extends SqliteDialect {
  readonly #database: NodeSqliteDatabase;
  readonly #busyTimeoutMs: number;

  constructor(database: NodeSqliteDatabase, busyTimeoutMs: number) {
    super({ database });
    this.#database = database;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  override createDriver(): Driver {
    return new BusyWaitDriver(this.#database, this.#busyTimeoutMs);
  }
}

/**
 * Retries only where SQLite says a retry is sound: a statement outside a transaction, or the BEGIN
 * itself. Transactions begin IMMEDIATE, so the write lock is taken (and waited for) at BEGIN, and
 * no statement inside a transaction can meet SQLITE_BUSY half way. Every transaction here writes, and
 * Kysely runs one operation at a time on the single connection anyway, so nothing is serialized that
 * was not already.
 */
class BusyWaitDriver extends SqliteDriver {
  readonly #database: NodeSqliteDatabase;
  readonly #busyTimeoutMs: number;
  #connection: DatabaseConnection | undefined;
  /**
   * When a statement last gave up waiting. Kysely queues every other operation behind the one that
   * waits; without this each of them would wait the whole bound again, one after the other. Within a
   * bound of a give-up, a statement that finds the database still locked fails at once.
   */
  #gaveUpAt: number | undefined;

  constructor(database: NodeSqliteDatabase, busyTimeoutMs: number) {
    super({ database });
    this.#database = database;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const inner = await super.acquireConnection();
    this.#connection ??= {
      executeQuery: <R>(query: CompiledQuery) => this.#waitingOutLocks(() => inner.executeQuery<R>(query)),
      streamQuery: (query, chunkSize) => inner.streamQuery(query, chunkSize),
    };
    return this.#connection;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async #waitingOutLocks<R>(statement: () => Promise<QueryResult<R>>): Promise<QueryResult<R>> {
    let deadline: number | undefined;
    for (let delay = FIRST_RETRY_MS; ; delay = Math.min(delay * 2, LONGEST_RETRY_MS)) {
      try {
        const result = await statement();
        this.#gaveUpAt = undefined;
        return result;
      } catch (err) {
        if (!isBusy(err) || this.#database.inTransaction) throw err;
        const now = Date.now();
        if (this.#gaveUpAt !== undefined && now - this.#gaveUpAt < this.#busyTimeoutMs) throw err;
        deadline ??= now + this.#busyTimeoutMs;
        if (now >= deadline) {
          this.#gaveUpAt = now;
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, deadline! - now)));
      }
    }
  }
}
