// FROZEN: shipped migrations never change; add a new file instead.
// Orders, their status history, and stored Idempotency-Key results.
import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function ordersMigration(dialect: Dialect): Migration {
  const pg = dialect === 'postgres';
  const time = pg ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('orders')
        // SQLite AUTOINCREMENT and PostgreSQL identity both guarantee a deleted order's id is never reused.
        .addColumn('id', pg ? 'bigint' : 'integer', (c) =>
          pg ? c.generatedAlwaysAsIdentity().primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('customer_id', pg ? 'uuid' : 'text', (c) => c.notNull())
        .addColumn('total_minor', 'bigint', (c) => c.notNull().check(sql`total_minor >= 0`))
        .addColumn('currency', pg ? 'char(3)' : 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) =>
          c.notNull().check(sql`status in ('pending', 'paid', 'cancelled', 'shipped', 'delivered')`),
        )
        .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('orders_customer_id_idx').on('orders').columns(['customer_id', 'id']).execute();
      await db.schema.createIndex('orders_status_idx').on('orders').columns(['status', 'id']).execute();

      await db.schema
        .createTable('order_status_changes')
        .addColumn('id', pg ? 'bigint' : 'integer', (c) =>
          pg ? c.generatedAlwaysAsIdentity().primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('order_id', 'bigint', (c) => c.notNull().references('orders.id').onDelete('cascade'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('changed_at', time, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('order_status_changes_order_idx')
        .on('order_status_changes')
        .columns(['order_id', 'id'])
        .execute();

      await db.schema
        .createTable('idempotency_keys')
        .addColumn('caller', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('locked_until', time, (c) => c.notNull())
        .addColumn('response_status', 'integer')
        .addColumn('response_headers', 'text')
        .addColumn('response_body', 'text')
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_keys_pk', ['caller', 'key'])
        .execute();
      await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').column('expires_at').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('idempotency_keys').execute();
      await db.schema.dropTable('order_status_changes').execute();
      await db.schema.dropTable('orders').execute();
    },
  };
}
