// Kysely's migrator over an in-code list: migrations ship inside the package (no directory scanning),
// and their names sort in the order they were written.
import { sql } from 'kysely';
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import type { DatabaseHandle } from './database.ts';
import { ordersMigration } from './migrations/0001-orders.ts';
import { authServerMigration } from './migrations/0002-auth-server.ts';
import { webhooksMigration } from './migrations/0003-webhooks.ts';

function migrationsFor(handle: DatabaseHandle): Record<string, Migration> {
  return {
    '0001-orders': ordersMigration(handle.dialect),
    '0002-auth-server': authServerMigration(handle.dialect),
    '0003-webhooks': webhooksMigration(handle.dialect),
  };
}

/**
 * On PostgreSQL the bookkeeping tables are pinned to the connection's current schema: left alone,
 * Kysely looks for them in every schema and skips creating its own when another schema has them.
 */
async function migratorFor(handle: DatabaseHandle): Promise<Migrator> {
  const schema = handle.dialect === 'postgres' ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(handle.db)).rows[0]?.schema : undefined;
  return new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => migrationsFor(handle) },
    migrationTableSchema: schema,
  });
}

export async function migrateToLatest(handle: DatabaseHandle): Promise<MigrationResultSet> {
  const result = await (await migratorFor(handle)).migrateToLatest();
  if (result.error) throw result.error;
  return result;
}

/** True when every known migration has been applied (the /readyz check). */
export async function migrationsAreCurrent(handle: DatabaseHandle): Promise<boolean> {
  const migrations = await (await migratorFor(handle)).getMigrations();
  return migrations.every((m) => m.executedAt !== undefined);
}
