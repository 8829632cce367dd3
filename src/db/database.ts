// Builds the Kysely instance for the configured DATABASE_URL: node:sqlite (embedded default) or pg.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, PostgresAdapter, sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import type { Config } from '../config/config.ts';
import { CurrentSchemaPostgresDialect } from './postgres/current-schema-introspector.ts';
import { checkpointThread, WRITER_AUTOCHECKPOINT_PAGES, type CheckpointThread } from './sqlite/sqlite-checkpointer.ts';
import { registerDirectRead, registerDirectTransactions } from './direct-read.ts';
import { NodeSqliteDialect } from './sqlite/sqlite-dialect.ts';
import type { GroupCommitStats } from './sqlite/sqlite-group-commit.ts';
import { openSqlite } from './sqlite/sqlite-driver.ts';
import type { Database } from './schema.ts';

import type { Db, Dialect, Executor } from './executor.ts';

export type { Db, Dialect, Executor };

export interface DatabaseHandle {
  db: Db;
  dialect: Dialect;
  /** SQLite: how many COMMITs the writer issued for how many transactions (sqlite-group-commit.ts). */
  groupCommit?: Readonly<GroupCommitStats>;
  /**
   * SQLite: sets the writer's PRAGMA temp_store between transactions. Migrations build indexes with
   * FILE (an index build sorts its whole table: in memory that was 262 MB for 2M rows, on file 50 MB);
   * the service writes with MEMORY.
   */
  setTempStore?: (mode: 'FILE' | 'MEMORY') => Promise<void>;
}

const PG_INT8_OID = 20;
/** A query with no answer this long after its statement_timeout has a dead or stalled connection. */
const READ_MARGIN_MS = 2000;
/** TCP keepalive on idle connections: a vanished host is noticed in about this plus 10 s of probes. */
const KEEPALIVE_MS = 10_000;

/** The defaults of the DATABASE_* and SQLITE_BUSY_TIMEOUT settings (src/config/config.ts), for callers without a Config. */
const DEFAULT_TIMEOUTS = {
  connectTimeoutMs: 5000,
  statementTimeoutMs: 5000,
  lockTimeoutMs: 3000,
  idleInTransactionTimeoutMs: 5000,
  sqliteBusyTimeoutMs: 3000,
  sqliteGroupCommitWindowMs: 1,
};

function dialectOf(url: string): Dialect {
  return url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
}

/** The dialect of a database or transaction, for the few statements spelled differently per dialect. */
export function executorDialect(db: Executor): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

interface OpenOptions {
  sqliteSynchronous?: 'NORMAL' | 'FULL';
  /** How long a query waits for a PostgreSQL connection (a new one or a free one in the pool). */
  connectTimeoutMs?: number;
  /** PostgreSQL statement_timeout; a query still unanswered READ_MARGIN_MS later closes its connection. */
  statementTimeoutMs?: number;
  /** PostgreSQL lock_timeout. */
  lockTimeoutMs?: number;
  /** PostgreSQL idle_in_transaction_session_timeout. */
  idleInTransactionTimeoutMs?: number;
  /** How long a SQLite write waits for another process's write lock. */
  sqliteBusyTimeoutMs?: number;
  /** How long a finished SQLite write waits for others to share its COMMIT. */
  sqliteGroupCommitWindowMs?: number;
  /** A pooled PostgreSQL connection failed while idle (server restart, failover, idle timeout). */
  onIdleConnectionError?: (err: Error) => void;
  /** SQLite: the thread that checkpoints the WAL (sqlite-checkpointer.ts; default: the process's shared one). */
  sqliteCheckpoints?: CheckpointThread;
  /** PostgreSQL: keep parameterised statements prepared per connection (default true). */
  preparedStatements?: boolean;
}

/** The options the service opens its database with. */
export function databaseOptions(config: Readonly<Config>): OpenOptions {
  return {
    sqliteSynchronous: config.sqliteSynchronous,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    lockTimeoutMs: config.databaseLockTimeoutMs,
    idleInTransactionTimeoutMs: config.databaseIdleInTransactionTimeoutMs,
    sqliteBusyTimeoutMs: config.sqliteBusyTimeoutMs,
    sqliteGroupCommitWindowMs: config.sqliteGroupCommitWindowMs,
    preparedStatements: config.databasePreparedStatements,
  };
}

/** Default for onIdleConnectionError: the pool has already dropped the connection; say so, once per loss. */
function logIdleConnectionError(err: Error): void {
  idleErrorLog ??= pino({ name: 'signet-db' });
  // The message and code only: pg-pool attaches the whole client to the error.
  const { message, code } = err as Error & { code?: string };
  idleErrorLog.warn(
    { err: { message, code } },
    'a pooled PostgreSQL connection was lost while idle; the next query opens a new one',
  );
}
let idleErrorLog: pino.Logger | undefined;

export function openDatabase(url: string, options: OpenOptions = {}): DatabaseHandle {
  const dialect = dialectOf(url);
  const timeouts = timeoutsOf(options);
  if (dialect === 'sqlite') {
    const path = url.slice('sqlite:'.length);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const synchronous = options.sqliteSynchronous ?? 'FULL';
    const inMemory = path === ':memory:';
    const writer = openSqlite(path, synchronous, {
      busyTimeoutMs: 0,
      tempStore: 'MEMORY',
      walAutocheckpointPages: inMemory ? undefined : WRITER_AUTOCHECKPOINT_PAGES,
    });
    const reader = inMemory ? undefined : openSqlite(path, synchronous, { busyTimeoutMs: 0, readOnly: true });
    const checkpoints = options.sqliteCheckpoints ?? checkpointThread;
    const startCheckpoints = inMemory ? undefined : () => checkpoints.watch(path, synchronous);
    const timing = { busyTimeoutMs: timeouts.sqliteBusyTimeoutMs, windowMs: timeouts.sqliteGroupCommitWindowMs };
    const sqlite = new NodeSqliteDialect(writer, reader, timing, startCheckpoints);
    const db = new Kysely<Database>({ dialect: sqlite });
    registerDirectRead(db, (query) => sqlite.driver.readDirect(query));
    registerDirectTransactions(db.getExecutor().adapter);
    return {
      dialect,
      db,
      groupCommit: sqlite.driver.stats,
      setTempStore: (mode) => sqlite.driver.execOutsideTransaction(`PRAGMA temp_store = ${mode}`),
    };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    Client: GuardedClient,
    readTimeoutMs: timeouts.statementTimeoutMs + READ_MARGIN_MS,
    preparedStatements: options.preparedStatements ?? true,
    // A server that accepts TCP but never answers would otherwise hold requests forever; after this
    // the request is a 503 with Retry-After (src/http/problems/outage.ts), like a refused connection.
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    // Sent in the startup packet, so every connection, a replacement too, has them from its first
    // query. A statement past them fails (57014, 55P03; 25P03 ends the session) and is answered 503:
    // a table lock held elsewhere, or a stalled transaction holding row locks, no longer holds requests.
    statement_timeout: timeouts.statementTimeoutMs,
    lock_timeout: timeouts.lockTimeoutMs,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_MS,
    // int8 (ids, counts, minor units) fits in a double below 2^53; every such column here stays far below it.
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === PG_INT8_OID ? Number : pg.types.getTypeParser(oid, format),
    } as pg.CustomTypesConfig,
  } as pg.PoolConfig & GuardedClientOptions);
  // node-postgres reports an idle client's failure as the pool's 'error' event; unheard, that event
  // throws and ends the process (a database restart would take every instance down with it).
  pool.on('error', options.onIdleConnectionError ?? logIdleConnectionError);
  return { dialect, db: new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool }) }) };
}

function timeoutsOf(options: OpenOptions): typeof DEFAULT_TIMEOUTS {
  const timeouts = { ...DEFAULT_TIMEOUTS };
  for (const key of Object.keys(timeouts) as Array<keyof typeof DEFAULT_TIMEOUTS>)
    timeouts[key] = options[key] ?? timeouts[key];
  return timeouts;
}

/** Set while `work` runs in withoutTimeouts: its queries may take as long as they need. */
const unbounded = new AsyncLocalStorage<true>();

/** Statements a connection keeps prepared (by text); later texts run unnamed, as before. */
const PREPARED_PER_CONNECTION = 256;

/**
 * A `*` in a select list or RETURNING: its columns are the table's, which a migration run by another
 * instance can change, and PostgreSQL refuses to run a prepared statement whose result columns changed
 * ("cached plan must not change result type"). Such texts are sent unnamed. count(*) is not one.
 */
const STAR_COLUMNS = /(?:\bselect|\breturning|,)\s+\*|\.\*/i;

/**
 * A parameterised query (what Kysely sends: text plus values) as a named prepared statement, so that
 * PostgreSQL parses and plans its text once per connection instead of on every call (the extended query
 * protocol's Parse step is skipped when the name is known). Only texts with parameters qualify: they are
 * single statements by construction. Returns undefined to send the query as it is.
 */
function preparedByName(names: Map<string, string>, args: unknown[]): [pg.QueryConfig] | undefined {
  const [text, values] = args;
  if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0 || args.length !== 2) return undefined;
  let name = names.get(text);
  if (name === undefined) {
    // Checked only before a text is first prepared: the scan of a create's ~3 KB text cost more than its lookup.
    if (names.size >= PREPARED_PER_CONNECTION || STAR_COLUMNS.test(text)) return undefined;
    name = `signet_${names.size}`;
    names.set(text, name);
  }
  return [{ name, text, values }];
}

interface GuardedClientOptions {
  readTimeoutMs?: number;
  preparedStatements?: boolean;
}

/**
 * A pooled PostgreSQL connection that survives its own loss and never waits forever for an answer.
 *
 * pg-pool listens for a client's 'error' only while the client is idle: a connection lost while
 * checked out (mid-query, or inside a transaction between queries: a terminated backend, 57P01 on a
 * restart, a TCP reset) emits 'error' with no listener, which throws and ends the process. Here every
 * client listens for its whole life. The query that was running fails (a 503); the client is then
 * not queryable, so the pool drops it when it is released and opens a new one for the next request.
 *
 * A network stall (the server or a middlebox stops answering, the socket stays open) leaves a query
 * waiting for ever: statement_timeout cannot help, its answer would not arrive either, and TCP
 * keepalive is answered by the kernel. A query still unanswered after `readTimeoutMs` closes the
 * socket, which fails it like a lost connection. (pg's own query_timeout would fail the query but keep
 * the connection, its query still running, and hand it to the next request.)
 */
class GuardedClient extends pg.Client {
  readonly #readTimeoutMs: number;
  /** Statement text → name, of the statements this connection has prepared; undefined: none are. */
  readonly #prepared: Map<string, string> | undefined;

  constructor(config: pg.ClientConfig & GuardedClientOptions = {}) {
    super(config);
    this.#readTimeoutMs = config.readTimeoutMs ?? 0;
    this.#prepared = config.preparedStatements === false ? undefined : new Map();
    // The failure itself is reported where it matters: to the query it failed, or to the next one
    // ("not queryable"), and for an idle client by the pool's 'error' event.
    this.on('error', () => undefined);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pg's query() has many overloads; this passes them all through
  override query(...args: any[]): any {
    const named = this.#prepared && preparedByName(this.#prepared, args);
    const answer: unknown = super.query(...((named ?? args) as Parameters<pg.Client['query']>));
    if (!(answer instanceof Promise)) return answer;
    const timer =
      this.#readTimeoutMs > 0 && !unbounded.getStore()
        ? setTimeout(() => this.#abandon(), this.#readTimeoutMs)
        : undefined;
    answer.then(
      () => clearTimeout(timer),
      (err: unknown) => {
        clearTimeout(timer);
        // A FATAL error (57P01 terminated, 25P03 idle in transaction …) ends the session, but the socket
        // closes a moment later: end the client now, so the pool drops it when the query's caller
        // releases it (this runs first) instead of handing a dead connection to the next request.
        const { severity } = err as { severity?: unknown };
        if (severity === 'FATAL' || severity === 'PANIC') this.end().catch(() => undefined);
      },
    );
    return answer;
  }

  #abandon(): void {
    const err = Object.assign(
      new Error(`no answer from PostgreSQL within ${this.#readTimeoutMs} ms; connection closed`),
      { code: 'ETIMEDOUT' },
    );
    this.connection.stream.destroy(err);
  }
}

/**
 * Runs `work` on one connection with statement, lock and idle-in-transaction timeouts lifted:
 * migrations, where building an index or waiting for another instance's migration lock may take
 * longer than a request should. SQLite: `work` simply runs (its busy bound stays).
 */
export async function withoutTimeouts<T>(handle: DatabaseHandle, work: (db: Db) => Promise<T>): Promise<T> {
  if (handle.dialect !== 'postgres') return work(handle.db);
  return unbounded.run(true, () =>
    handle.db.connection().execute(async (connection) => {
      await sql`set statement_timeout = 0; set lock_timeout = 0; set idle_in_transaction_session_timeout = 0`.execute(
        connection,
      );
      // RESET returns to the session's defaults: the values sent when the connection opened.
      const restore = () =>
        sql`reset statement_timeout; reset lock_timeout; reset idle_in_transaction_session_timeout`.execute(connection);
      let result: T;
      try {
        result = await work(connection);
      } catch (err) {
        await restore().catch(() => undefined); // a lost connection is dropped by the pool anyway
        throw err;
      }
      await restore();
      return result;
    }),
  );
}
