// Builds the Kysely instance for the configured DATABASE_URL: node:sqlite (embedded default) or pg.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
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

export function dialectOf(url: string): Dialect {
  return url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
}

export function openDatabase(url: string, options: { sqliteSynchronous?: 'NORMAL' | 'FULL' } = {}): DatabaseHandle {
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
    // int8 (ids, counts, minor units) fits in a double below 2^53; every such column here stays far below it.
    types: { getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === PG_INT8_OID ? Number : pg.types.getTypeParser(oid, format)) } as pg.CustomTypesConfig,
  });
  return { dialect, db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }) };
}
