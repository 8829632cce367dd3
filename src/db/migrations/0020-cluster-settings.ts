// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The settings every instance of a cluster must share, as the first instance to start recorded them
// (src/db/cluster-settings.ts; docs/operations/scaling-out.md, "Settings"): an instance started with others refuses.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function clusterSettingsMigration(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('cluster_settings')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        // 0: derived from HOST and PORT (a single instance in development), which a later start may replace.
        .addColumn('explicit', 'integer', (c) => c.notNull())
        .addColumn('recorded_at', time, (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('cluster_settings').execute();
    },
  };
}
