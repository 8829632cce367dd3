// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The operators' delivery log and event browser (docs/guides/admin-api.md) read every client's rows
// newest first in keyset pages; these indexes give each filter its order, so a page reads the rows it
// returns instead of sorting what matches (plans and timings: bench/api/admin-log.ts). The global order is
// webhook_deliveries_created_idx (0010).
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

const INDEXES: readonly [name: string, table: string, columns: string[]][] = [
  ['webhook_deliveries_state_created_idx', 'webhook_deliveries', ['state', 'created_at', 'id']],
  ['webhook_deliveries_endpoint_created_idx', 'webhook_deliveries', ['endpoint_id', 'created_at', 'id']],
  ['webhook_events_type_occurred_idx', 'webhook_events', ['type', 'occurred_at', 'seq']],
  // The owner's event feed filtered by type (GET /api/events?type=) pages in seq order.
  ['webhook_events_type_seq_idx', 'webhook_events', ['type', 'seq']],
];

export function adminDeliveryIndexesMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const [name, table, columns] of INDEXES)
        await db.schema.createIndex(name).on(table).columns(columns).execute();
      // A prefix of webhook_deliveries_endpoint_created_idx: every query (and the cascade) it served, that one serves.
      await db.schema.dropIndex('webhook_deliveries_endpoint_idx').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema
        .createIndex('webhook_deliveries_endpoint_idx')
        .on('webhook_deliveries')
        .columns(['endpoint_id', 'created_at'])
        .execute();
      for (const [name] of INDEXES) await db.schema.dropIndex(name).execute();
    },
  };
}
