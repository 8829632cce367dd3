// Builds the Kysely instance for the configured DATABASE_URL: node:sqlite (embedded default) or pg.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, sql, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { CurrentSchemaPostgresDialect } from './current-schema-introspector.ts';
import { openSqlite } from './sqlite-driver.ts';
import type { Database } from './schema.ts';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
/** Repositories take either the database or an open transaction as their first argument. */
export type Executor = Kysely<Database> | Transaction<Database>;

export interface DatabaseHandle {
  db: Db;
  dialect: Dialect;
}

const PG_INT8_OID = 20;
const CONNECT_TIMEOUT_MS = 10_000;
const SQLITE_SYNCHRONOUS_NORMAL = 1;

export function dialectOf(url: string): Dialect {
  return url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
}

export interface OpenOptions {
  sqliteSynchronous?: 'NORMAL' | 'FULL';
  /** How long a query waits for a PostgreSQL connection (a new one or a free one in the pool). */
  connectTimeoutMs?: number;
  /** A pooled PostgreSQL connection failed while idle (server restart, failover, idle timeout). */
  onIdleConnectionError?: (err: Error) => void;
}

/** Default for onIdleConnectionError: the pool has already dropped the connection; say so, once per loss. */
function logIdleConnectionError(err: Error): void {
  idleErrorLog ??= pino({ name: 'signet-db' });
  // The message and code only: pg-pool attaches the whole client to the error.
  const { message, code } = err as Error & { code?: string };
  idleErrorLog.warn({ err: { message, code } }, 'a pooled PostgreSQL connection was lost while idle; the next query opens a new one');
}
let idleErrorLog: pino.Logger | undefined;

export function openDatabase(url: string, options: OpenOptions = {}): DatabaseHandle {
  const dialect = dialectOf(url);
  if (dialect === 'sqlite') {
    const path = url.slice('sqlite:'.length);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const database = openSqlite(path, options.sqliteSynchronous ?? 'FULL');
    return { dialect, db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }) };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    // A server that accepts TCP but never answers would otherwise hold requests forever; after this
    // the request is a 503 with Retry-After (src/http/outage.ts), like a refused connection.
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    // int8 (ids, counts, minor units) fits in a double below 2^53; every such column here stays far below it.
    types: { getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === PG_INT8_OID ? Number : pg.types.getTypeParser(oid, format)) } as pg.CustomTypesConfig,
  });
  // node-postgres reports an idle client's failure as the pool's 'error' event; unheard, that event
  // throws and ends the process (a database restart would take every instance down with it).
  pool.on('error', options.onIdleConnectionError ?? logIdleConnectionError);
  return { dialect, db: new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool }) }) };
}

/**
 * Runs `work` on one connection whose commits skip the fsync on SQLite (WAL with synchronous=NORMAL:
 * durable across a process crash, possibly lost with the machine's power). Only for writes that are
 * safe to lose that way, such as a dispatcher's leases and outcomes, which at-least-once delivery
 * redoes. The next FULL commit (any order change) syncs the log with them. PostgreSQL: unchanged.
 */
export async function withoutFsync<T>(db: Db, dialect: Dialect, work: (connection: Db) => Promise<T>): Promise<T> {
  if (dialect !== 'sqlite') return work(db);
  return db.connection().execute(async (connection) => {
    const { rows } = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(connection);
    const level = Number(rows[0]?.synchronous);
    if (level <= SQLITE_SYNCHRONOUS_NORMAL) return work(connection);
    await sql`PRAGMA synchronous = NORMAL`.execute(connection);
    try {
      return await work(connection);
    } finally {
      await sql`PRAGMA synchronous = ${sql.raw(String(level))}`.execute(connection);
    }
  });
}
