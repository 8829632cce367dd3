// Kysely's migrator over an in-code list: migrations ship inside the package (no directory scanning),
// and their names sort in the order they were written.
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import type { DatabaseHandle } from './database.ts';
import { ordersMigration } from './migrations/0001-orders.ts';

function migrationsFor(handle: DatabaseHandle): Record<string, Migration> {
  return {
    '0001-orders': ordersMigration(handle.dialect),
  };
}

function migratorFor(handle: DatabaseHandle): Migrator {
  return new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => migrationsFor(handle) },
  });
}

export async function migrateToLatest(handle: DatabaseHandle): Promise<MigrationResultSet> {
  const result = await migratorFor(handle).migrateToLatest();
  if (result.error) throw result.error;
  return result;
}

/** True when every known migration has been applied (the /readyz check). */
export async function migrationsAreCurrent(handle: DatabaseHandle): Promise<boolean> {
  const migrations = await migratorFor(handle).getMigrations();
  return migrations.every((m) => m.executedAt !== undefined);
}
