// FROZEN once shipped: shipped migrations never change; add a new file instead.
// Operating Signet over HTTP (docs/guides/admin-api.md): users gain roles and can be disabled, and
// the append-only audit trail records every security-relevant action.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function operationsMigration(dialect: Dialect): Migration {
  const pg = dialect === 'postgres';
  const time = pg ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('users')
        .addColumn('roles', 'text', (c) => c.notNull().defaultTo('[]')) // JSON array, e.g. ["admin"]
        .execute();
      await db.schema.alterTable('users').addColumn('disabled_at', time).execute();
      await db.schema
        .createTable('audit_log')
        // The cursor order: entries are appended, never updated or deleted except by retention.
        .addColumn('seq', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('id', 'text', (c) => c.notNull().unique()) // aud_…
        .addColumn('occurred_at', time, (c) => c.notNull())
        .addColumn('actor_type', 'text', (c) => c.notNull()) // user | client | cli | system
        .addColumn('actor_id', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target_type', 'text')
        .addColumn('target_id', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull()) // success | failure
        .addColumn('request_id', 'text')
        .addColumn('source_address', 'text')
        .addColumn('details', 'text', (c) => c.notNull().defaultTo('{}')) // JSON object, never a secret
        .execute();
      await db.schema.createIndex('audit_log_occurred_at').on('audit_log').column('occurred_at').execute();
      await db.schema.createIndex('audit_log_actor').on('audit_log').columns(['actor_id', 'seq']).execute();
      await db.schema.createIndex('audit_log_action').on('audit_log').columns(['action', 'seq']).execute();
      await db.schema.createIndex('audit_log_target').on('audit_log').columns(['target_id', 'seq']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('audit_log').execute();
      await db.schema.alterTable('users').dropColumn('disabled_at').execute();
      await db.schema.alterTable('users').dropColumn('roles').execute();
    },
  };
}
