// Adapts the built-in node:sqlite DatabaseSync to the small interface Kysely's SqliteDialect expects
// (the better-sqlite3 shape), so no native addon has to be compiled against one Node version.
import { closeSync, openSync } from 'node:fs';
import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

const STATEMENT_CACHE_SIZE = 256;

class CachedStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly #stmt: StatementSync;

  constructor(stmt: StatementSync) {
    this.#stmt = stmt;
    // A statement returns rows when it has result columns (SELECT, or anything with RETURNING).
    this.reader = stmt.columns().length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    return this.#stmt.all(...toInputs(parameters));
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    return this.#stmt.run(...toInputs(parameters));
  }

  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    return this.#stmt.iterate(...toInputs(parameters)) as IterableIterator<unknown>;
  }
}

function toInputs(parameters: ReadonlyArray<unknown>): SQLInputValue[] {
  return parameters.map((p) => {
    if (typeof p === 'boolean') return p ? 1 : 0;
    if (p === undefined) return null;
    if (p instanceof Date) return p.toISOString();
    return p as SQLInputValue;
  });
}

/** The connection as Kysely sees it, plus what the group-commit driver needs (see sqlite-group-commit.ts). */
export interface NodeSqliteDatabase extends SqliteDatabase {
  readonly inTransaction: boolean;
  /** Runs statements without parameters or results: BEGIN, SAVEPOINT, COMMIT. */
  exec(sql: string): void;
}

interface OpenSqliteOptions {
  busyTimeoutMs?: number;
  /** A second connection for reads only: it sees what is committed, never a transaction in progress. */
  readOnly?: boolean;
  /**
   * Where temporary files go (PRAGMA temp_store). The service's writer keeps them in memory: every
   * member of a group commit writes in its own SAVEPOINT, whose statement journal otherwise spills to a
   * temp file, and that file's writes were 40 % of a create's SQLite time (docs/benchmarks-history.md, "temp_store").
   */
  tempStore?: 'FILE' | 'MEMORY';
  /**
   * PRAGMA wal_autocheckpoint: the WAL size, in pages, at which a COMMIT checkpoints. The service's
   * writer leaves checkpoints to a thread (sqlite-checkpointer.ts) and keeps this only as a safety net.
   */
  walAutocheckpointPages?: number;
}

/**
 * Opens the file with the pragmas a service wants: WAL (readers never block the writer),
 * foreign keys on, a busy timeout so a second process (`signet migrate`) waits instead of failing.
 * The service passes 0 and waits in sqlite-dialect.ts instead, without blocking the event loop.
 * Prepared statements are cached by SQL text: Kysely compiles the same text for the same query shape,
 * and preparing costs more than running a primary-key lookup.
 */
export function openSqlite(
  path: string,
  synchronous: 'NORMAL' | 'FULL',
  { busyTimeoutMs = 5000, readOnly = false, tempStore = 'FILE', walAutocheckpointPages = 1000 }: OpenSqliteOptions = {},
): NodeSqliteDatabase {
  if (!readOnly) createPrivately(path);
  const db = new DatabaseSync(path, { readOnly });
  // journal_mode is a property of the file, set by the writer; a read-only connection cannot set it.
  const journal = readOnly
    ? ''
    : `PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = ${Math.trunc(walAutocheckpointPages)}; `;
  db.exec(
    `${journal}PRAGMA synchronous = ${synchronous}; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}; PRAGMA temp_store = ${tempStore};`,
  );
  const cache = new Map<string, CachedStatement>();
  return {
    close: () => db.close(),
    exec: (sql: string) => db.exec(sql),
    get inTransaction() {
      return db.isTransaction;
    },
    prepare(sql: string): SqliteStatement {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = new CachedStatement(db.prepare(sql));
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
}

/**
 * A new database file is created 0600 (owner only), like the webhook key file: it holds refresh
 * tokens and, without KEY_ENCRYPTION_KEY, signing keys. SQLite gives its -wal and -shm files the
 * mode of the database file. An existing file keeps the mode it has.
 */
function createPrivately(path: string): void {
  if (path === '' || path === ':memory:' || path.startsWith('file:')) return;
  closeSync(openSync(path, 'a', 0o600));
}
