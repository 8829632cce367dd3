/* eslint-disable @typescript-eslint/no-explicit-any -- frozen migrations take Kysely<any>: they must not depend on today's table types */
// FROZEN: shipped migrations never change; add a new entry instead.
// The receiver's own tables, all prefixed receiver_ so the kit can share a database with anything.
import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

export type InboxDialect = 'sqlite' | 'postgres';

function inboxMigration(dialect: InboxDialect): Migration {
  const pg = dialect === 'postgres';
  const time = pg ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('receiver_inbox')
        // Arrival order: the worker processes entries by seq.
        .addColumn('seq', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('delivery_id', 'text') // X-Service-Delivery; null for entries found by reconciliation
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull()) // raw JSON as received; never logged
        .addColumn('via', 'text', (c) => c.notNull()) // webhook | reconciliation
        .addColumn('received_at', time, (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull()) // pending | done | dead
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('next_attempt_at', time, (c) => c.notNull())
        .addColumn('lease_until', time) // set while a worker holds the entry
        .execute();
      // The delivery id is the idempotency key (docs/guides/producing-webhooks.md, "What a delivery looks like"); the
      // event id also dedupes, because reconciliation and a late webhook can bring the same event under different (or
      // no) delivery ids. NULL delivery ids never collide, on SQLite and on PostgreSQL alike.
      await db.schema
        .createIndex('receiver_inbox_delivery_uq')
        .on('receiver_inbox')
        .columns(['source', 'delivery_id'])
        .unique()
        .execute();
      await db.schema
        .createIndex('receiver_inbox_event_uq')
        .on('receiver_inbox')
        .columns(['source', 'event_id'])
        .unique()
        .execute();
      await db.schema
        .createIndex('receiver_inbox_pending_idx')
        .on('receiver_inbox')
        .columns(['state', 'seq'])
        .execute();
      await db.schema
        .createIndex('receiver_inbox_received_idx')
        .on('receiver_inbox')
        .columns(['state', 'received_at'])
        .execute();

      await db.schema
        .createTable('receiver_cursors')
        .addColumn('source', 'text', (c) => c.primaryKey())
        .addColumn('cursor', 'text', (c) => c.notNull()) // the producer's opaque NextCursor
        .addColumn('updated_at', time, (c) =>
          c.notNull().defaultTo(pg ? sql`now()` : sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
        )
        .execute();
    },
  };
}

/**
 * Who holds a lease: a token drawn at each claim. lease_until alone says only that *someone* holds the entry; a worker
 * that stalled past its lease must not complete, retry or renew an entry another worker has claimed since, so every
 * write of the holder is conditional on its token (docs/guides/receiving-webhooks.md, "Inbox and worker").
 */
const leaseOwnerMigration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('receiver_inbox').addColumn('lease_id', 'text').execute();
  },
};

/** In code, not scanned from a directory: the kit ships as source and names sort in writing order. */
export function inboxMigrations(dialect: InboxDialect): Record<string, Migration> {
  return { '0001-receiver-inbox': inboxMigration(dialect), '0002-receiver-inbox-lease-owner': leaseOwnerMigration };
}
