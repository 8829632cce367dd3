// Tamper evidence for the audit trail (docs/security.md, "Audit integrity"): every entry carries the SHA-256
// of a canonical encoding of itself and of the previous entry's hash, so an UPDATE changes an entry's hash
// and a DELETE breaks the next entry's link; `signet audit verify` and GET /api/admin/audit/verify walk
// the chain and name the first entry where it breaks.
//
// Appends are serialised so the chain has one order: entries are written in their callers' transactions,
// so each append takes a lock held until that transaction ends — on PostgreSQL a transaction-scoped
// advisory lock, on SQLite the single writer (every write transaction runs alone on it,
// sqlite-group-commit.ts). The next append then reads the head only once the previous one has committed
// or rolled back. The price: transactions that write an audit entry commit one after another.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { executorDialect } from '../db/database.ts';
import { fromDbTime } from '../db/codecs.ts';
import type { Executor } from '../db/executor.ts';
import type { AuditLogTable } from '../db/schema.ts';

/** The previous hash of the first entry ever written. */
export const GENESIS_HASH = '0'.repeat(64);
/** pg_advisory_xact_lock key of the chain ("audit" in ASCII). */
const CHAIN_LOCK = 0x6175646974;

export type ChainedEntry = Omit<AuditLogTable, 'seq' | 'prev_hash' | 'hash'>;

/**
 * SHA-256 over a JSON array of the entry's members in a fixed order (version 1), the time as RFC 3339 UTC
 * with milliseconds and `details` as the JSON text stored: the same bytes whichever database returns them.
 */
export function entryHash(entry: ChainedEntry, prevHash: string): string {
  const canonical = JSON.stringify([
    1,
    entry.id,
    fromDbTime(entry.occurred_at).toISOString(),
    entry.actor_type,
    entry.actor_id,
    entry.action,
    entry.target_type,
    entry.target_id,
    entry.outcome,
    entry.request_id,
    entry.source_address,
    entry.details,
    prevHash,
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/** Takes the append lock (PostgreSQL) and reads the hash of the newest entry; inside a transaction only. */
export async function chainHead(trx: Executor): Promise<string> {
  if (executorDialect(trx) === 'postgres') await sql`select pg_advisory_xact_lock(${CHAIN_LOCK})`.execute(trx);
  const head = await trx.selectFrom('audit_log').select('hash').orderBy('seq', 'desc').limit(1).executeTakeFirst();
  return head?.hash ?? GENESIS_HASH;
}

export interface ChainVerdict {
  /** True when every link holds. */
  intact: boolean;
  /** Entries checked. */
  checked: number;
  /** The oldest entry: its own previous hash cannot be checked (older entries may have been purged by retention). */
  firstId: string | null;
  lastId: string | null;
  /** The first entry where the chain breaks, and why. */
  broken?: { id: string; seq: number; reason: 'altered' | 'unlinked' | 'unhashed' };
}

const PAGE = 1000;

/**
 * Walks the trail oldest first. `altered`: the entry's stored hash is not the hash of its content (it was
 * changed); `unlinked`: its previous hash is not the hash of the entry before it (an entry before it was
 * deleted, or inserted); `unhashed`: it carries no hash (written around recordAudit).
 */
export async function verifyAuditChain(db: Executor): Promise<ChainVerdict> {
  let checked = 0;
  let previous: string | undefined;
  let firstId: string | null = null;
  let lastId: string | null = null;
  let after = 0;
  for (;;) {
    const rows = await db
      .selectFrom('audit_log')
      .selectAll()
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(PAGE)
      .execute();
    for (const row of rows) {
      const seq = Number(row.seq);
      const verdict = (reason: NonNullable<ChainVerdict['broken']>['reason']): ChainVerdict => ({
        intact: false,
        checked,
        firstId,
        lastId,
        broken: { id: row.id, seq, reason },
      });
      if (!row.hash || !row.prev_hash) return verdict('unhashed');
      if (previous !== undefined && row.prev_hash !== previous) return verdict('unlinked');
      if (entryHash(row, row.prev_hash) !== row.hash) return verdict('altered');
      checked += 1;
      firstId ??= row.id;
      lastId = row.id;
      previous = row.hash;
      after = seq;
    }
    if (rows.length < PAGE) return { intact: true, checked, firstId, lastId };
  }
}
