// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The audit trail streamed out through the webhook outbox (docs/security.md, "Streaming the audit trail"): one
// row per relay naming the last audit entry (`audit_log.seq`) it has turned into events. It starts at the newest
// entry of the day it ships: entries written before anyone could register an audit endpoint go nowhere.
import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

export function auditStreamMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('audit_stream')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('last_seq', 'bigint', (c) => c.notNull())
        .execute();
      const { rows } = await sql<{ seq: number | string | null }>`select max(seq) as seq from audit_log`.execute(db);
      await db
        .insertInto('audit_stream')
        .values({ name: 'webhooks', last_seq: Number(rows[0]?.seq ?? 0) })
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('audit_stream').execute();
    },
  };
}
