// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The operator overview (GET /api/admin/stats): hourly counts of issued tokens by grant type, which
// nothing recorded before, and the indexes that keep the overview's time-range reads off full scans.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function tokenStatsMigration(dialect: Dialect): Migration {
  const pg = dialect === 'postgres';
  const time = pg ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('token_stats')
        .addColumn('hour', time, (c) => c.notNull()) // the start of the UTC hour counted
        .addColumn('grant_type', 'text', (c) => c.notNull())
        .addColumn('count', pg ? 'bigint' : 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('token_stats_pkey', ['hour', 'grant_type'])
        .execute();
      // Attempts by start time; with the outcome and duration in the index the overview never reads a row.
      await db.schema
        .createIndex('webhook_attempts_started_idx')
        .on('webhook_attempts')
        .columns(['started_at', 'error_kind', 'duration_ms'])
        .execute();
      // Pending deliveries over time: those created in the window, and those settled (state, updated_at)
      // since its start, with created_at so that the scan never reads a row.
      await db.schema
        .createIndex('webhook_deliveries_created_idx')
        .on('webhook_deliveries')
        .column('created_at')
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_settled_idx')
        .on('webhook_deliveries')
        .columns(['state', 'updated_at', 'created_at'])
        .execute();
      // Sign-ins per hour: one action over a time range (audit_log_action orders by seq, not time).
      await db.schema.createIndex('audit_log_action_time').on('audit_log').columns(['action', 'occurred_at']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('audit_log_action_time').execute();
      await db.schema.dropIndex('webhook_deliveries_settled_idx').execute();
      await db.schema.dropIndex('webhook_deliveries_created_idx').execute();
      await db.schema.dropIndex('webhook_attempts_started_idx').execute();
      await db.schema.dropTable('token_stats').execute();
    },
  };
}
