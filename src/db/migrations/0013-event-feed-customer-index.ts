// FROZEN once shipped: shipped migrations never change; add a new file instead.
// An end user's event feed (GET /api/events with a user token: the events of their own orders) filters
// by customer_id and pages in feed order. Without an index SQLite walked the feed from the cursor on,
// reading every client's events to find one customer's (with a million events, a page cost 6× the
// empty database's: bench/scale/scale.ts, docs/benchmarks.md "Cost as data grows and memory"). The feed order is seq on
// SQLite and (tx_id, seq) on PostgreSQL (events.repository.ts), so the index ends with it there.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

const NAME = 'webhook_events_customer_position_idx';

export function eventFeedCustomerIndexMigration(dialect: Dialect): Migration {
  const position = dialect === 'postgres' ? ['customer_id', 'tx_id', 'seq'] : ['customer_id', 'seq'];
  return {
    async up(db: Kysely<any>) {
      await db.schema.createIndex(NAME).on('webhook_events').columns(position).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex(NAME).execute();
    },
  };
}
