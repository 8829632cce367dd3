// Opens the inbox's database (node:sqlite or pg, through Kysely) and applies the kit's own migrations,
// recorded in their own receiver_ bookkeeping tables so they never mix with a host application's.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, sql, SqliteDialect, type Generated } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { CurrentSchemaPostgresDialect } from '../db/postgres/current-schema-introspector.ts';
import { openSqlite } from '../db/sqlite/sqlite-driver.ts';
import { inboxMigrations, type InboxDialect } from './inbox.migrations.ts';

export interface InboxTables {
  receiver_inbox: {
    seq: Generated<number>;
    source: string;
    delivery_id: string | null;
    event_id: string;
    event_type: string;
    body: string;
    via: string;
    received_at: Date | string;
    state: string;
    attempts: number;
    last_error: string | null;
    next_attempt_at: Date | string;
    lease_until: Date | string | null;
    /** The claim's token (migration 0002); null while nobody holds the entry. */
    lease_id: string | null;
  };
  receiver_cursors: { source: string; cursor: string; updated_at: Generated<Date | string> };
}

export interface InboxDatabase {
  db: Kysely<InboxTables>;
  dialect: InboxDialect;
}

const PG_INT8_OID = 20;

export function openInboxDatabase(url: string): InboxDatabase {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new Error('inbox database: sqlite: needs a file path or :memory:');
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    // synchronous=FULL: a 200 tells the producer to stop retrying, so the entry must be on disk
    // before it is sent (docs/guides/producing-webhooks.md, "What a delivery looks like": store the delivery id).
    const database = openSqlite(path, 'FULL');
    return { dialect: 'sqlite', db: new Kysely<InboxTables>({ dialect: new SqliteDialect({ database }) }) };
  }
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new Error('inbox database: expected sqlite:<path>, sqlite::memory: or postgres://…');
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    // seq is bigserial (int8); it stays far below 2^53, so a JS number is exact.
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === PG_INT8_OID ? Number : pg.types.getTypeParser(oid, format),
    } as pg.CustomTypesConfig,
  });
  // An idle client's failure (database restart, failover) is the pool's 'error' event; unheard, it would
  // end the receiver. The pool has dropped the client already; the next query opens a new one.
  pool.on('error', (err) =>
    process.emitWarning(
      `inbox database: a pooled connection was lost while idle (${err.message})`,
      'SignetReceiverWarning',
    ),
  );
  return { dialect: 'postgres', db: new Kysely<InboxTables>({ dialect: new CurrentSchemaPostgresDialect({ pool }) }) };
}

export async function migrateInbox(handle: InboxDatabase): Promise<void> {
  // PostgreSQL: pin the bookkeeping tables to the current schema, or Kysely may find another
  // schema's copy on the search path and skip creating its own.
  const schema =
    handle.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(handle.db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => inboxMigrations(handle.dialect) },
    migrationTableName: 'receiver_kysely_migration',
    migrationLockTableName: 'receiver_kysely_migration_lock',
    migrationTableSchema: schema,
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}
