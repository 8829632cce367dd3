// FROZEN: shipped migrations never change; add a new file instead.
// Webhooks: registered endpoints, the transactional outbox of events, one delivery per event and
// endpoint, and the log of every delivery attempt.
import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function webhooksMigration(dialect: Dialect): Migration {
  const pg = dialect === 'postgres';
  const time = pg ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', 'text', (c) => c.primaryKey()) // whep_…
        .addColumn('owner', 'text', (c) => c.notNull()) // the OAuth client that registered it
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('event_types', 'text', (c) => c.notNull()) // JSON array of types, or ["*"]
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('disabled_reason', 'text') // manual | gone | failing
        .addColumn('secret', 'text', (c) => c.notNull()) // AES-256-GCM sealed
        .addColumn('previous_secret', 'text') // sealed; still signs until previous_secret_expires_at
        .addColumn('previous_secret_expires_at', time)
        .addColumn('failing_since', time) // first failure of the current unbroken run of failures
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('webhook_endpoints_owner_idx')
        .on('webhook_endpoints')
        .columns(['owner', 'created_at'])
        .execute();

      // The outbox. `seq` orders events on SQLite (one writer: insert order is commit order). On
      // PostgreSQL ids are handed out before commit, so a later id can commit first; there the list
      // is ordered by (tx_id, seq) and only shows transactions older than every one still running.
      let events = db.schema
        .createTable('webhook_events')
        .addColumn('seq', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('id', 'text', (c) => c.notNull().unique()) // evt_…
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('occurred_at', time, (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull()) // JSON, exactly as sent
        .addColumn('owner', 'text') // set for events about one client's endpoints (ping, disabled)
        .addColumn('customer_id', 'text') // set for order events: who may read them with a user token
        .addColumn('order_id', 'integer');
      if (pg) events = events.addColumn('tx_id', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`));
      await events.execute();
      if (pg)
        await db.schema
          .createIndex('webhook_events_position_idx')
          .on('webhook_events')
          .columns(['tx_id', 'seq'])
          .execute();
      await db.schema.createIndex('webhook_events_occurred_idx').on('webhook_events').column('occurred_at').execute();
      await db.schema.createIndex('webhook_events_order_idx').on('webhook_events').column('order_id').execute();

      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey()) // dlv_…: X-Service-Delivery, the same on every attempt
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('state', 'text', (c) => c.notNull()) // pending | succeeded | failed
        .addColumn('attempt_count', 'integer', (c) => c.notNull())
        .addColumn('retry_index', 'integer', (c) => c.notNull()) // position in the retry schedule
        .addColumn('next_attempt_at', time, (c) => c.notNull())
        .addColumn('lease_owner', 'text') // the claim that holds it; null when free
        .addColumn('lease_until', time)
        .addColumn('last_status_code', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .addUniqueConstraint('webhook_deliveries_event_endpoint_key', ['event_id', 'endpoint_id'])
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_due_idx')
        .on('webhook_deliveries')
        .columns(['state', 'next_attempt_at'])
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_endpoint_idx')
        .on('webhook_deliveries')
        .columns(['endpoint_id', 'created_at'])
        .execute();

      await db.schema
        .createTable('webhook_attempts')
        .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('started_at', time, (c) => c.notNull())
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('status_code', 'integer')
        .addColumn('error_kind', 'text')
        .addColumn('error_detail', 'text')
        .addColumn('response_excerpt', 'text')
        .execute();
      await db.schema
        .createIndex('webhook_attempts_delivery_idx')
        .on('webhook_attempts')
        .column('delivery_id')
        .execute();
    },
  };
}
