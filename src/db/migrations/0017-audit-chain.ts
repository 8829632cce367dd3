// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The audit trail becomes a hash chain (src/audit/audit-chain.ts; docs/security.md, "Audit integrity"):
// each entry carries the previous entry's hash and its own. The entries already written are chained
// here, oldest first, with the encoding of audit-chain.ts version 1 repeated below (a frozen migration
// must not change when that module does).
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

const GENESIS_HASH = '0'.repeat(64);
const BATCH = 500;

interface Row {
  seq: number | string;
  id: string;
  occurred_at: string | Date;
  actor_type: string;
  actor_id: string;
  action: string;
  target_type: string | null;
  target_id: string | null;
  outcome: string;
  request_id: string | null;
  source_address: string | null;
  details: string;
}

function hashOf(row: Row, prevHash: string): string {
  const at = row.occurred_at instanceof Date ? row.occurred_at : new Date(row.occurred_at);
  const canonical = JSON.stringify([
    1,
    row.id,
    at.toISOString(),
    row.actor_type,
    row.actor_id,
    row.action,
    row.target_type,
    row.target_id,
    row.outcome,
    row.request_id,
    row.source_address,
    row.details,
    prevHash,
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

export function auditChainMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('audit_log').addColumn('prev_hash', 'text').execute();
      await db.schema.alterTable('audit_log').addColumn('hash', 'text').execute();
      let previous = GENESIS_HASH;
      let after = 0;
      for (;;) {
        const rows = (await db
          .selectFrom('audit_log')
          .selectAll()
          .where('seq', '>', after)
          .orderBy('seq')
          .limit(BATCH)
          .execute()) as Row[];
        for (const row of rows) {
          const hash = hashOf(row, previous);
          await db.updateTable('audit_log').set({ prev_hash: previous, hash }).where('seq', '=', row.seq).execute();
          previous = hash;
          after = Number(row.seq);
        }
        if (rows.length < BATCH) return;
      }
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('audit_log').dropColumn('hash').execute();
      await db.schema.alterTable('audit_log').dropColumn('prev_hash').execute();
    },
  };
}
