// Reading the audit trail (docs/security.md, "The audit trail"): the admin API (GET /api/admin/audit) and
// `signet audit` share this one query, newest first, so the two cannot show different things.
import type { Selectable } from 'kysely';
import type { Executor } from '../db/executor.ts';
import type { AuditLogTable } from '../db/schema.ts';
import { fromDbTime, toDbTime } from '../db/codecs.ts';
import type { ActorType } from './audit.ts';

interface AuditFilters {
  /** The actor's id: a user's `sub`, a `client_id`, the OS user of `cli`, `signet` for the system. */
  actor?: string;
  action?: string;
  /** The target's id (a user id, a client_id, a grant id, an endpoint id …). */
  target?: string;
  /** Inclusive lower bound of `occurred_at`. */
  since?: Date;
  /** Exclusive upper bound of `occurred_at`. */
  until?: Date;
}

export interface AuditPage {
  limit: number;
  /** Entries strictly older (by `seq`) than this position: the cursor of the previous page. */
  beforeSeq?: number;
}

export interface AuditRecord {
  /** The position in the trail (append order); what a cursor stores. */
  seq: number;
  id: string;
  occurredAt: Date;
  actor: { type: ActorType; id: string };
  action: string;
  target: { type: string; id: string } | null;
  outcome: 'success' | 'failure';
  requestId: string | null;
  sourceAddress: string | null;
  details: Record<string, unknown>;
}

/** One page of entries matching `filters`, newest first; `more` when an older entry follows. */
export async function listAudit(
  db: Executor,
  filters: AuditFilters,
  page: AuditPage,
): Promise<{ entries: AuditRecord[]; more: boolean }> {
  let query = db.selectFrom('audit_log').selectAll();
  if (filters.actor !== undefined) query = query.where('actor_id', '=', filters.actor);
  if (filters.action !== undefined) query = query.where('action', '=', filters.action);
  if (filters.target !== undefined) query = query.where('target_id', '=', filters.target);
  if (filters.since !== undefined) query = query.where('occurred_at', '>=', toDbTime(filters.since));
  if (filters.until !== undefined) query = query.where('occurred_at', '<', toDbTime(filters.until));
  if (page.beforeSeq !== undefined) query = query.where('seq', '<', page.beforeSeq);
  // seq, not occurred_at: unique and in append order, so a cursor never skips or repeats an entry.
  const rows = await query
    .orderBy('seq', 'desc')
    .limit(page.limit + 1)
    .execute();
  return { entries: rows.slice(0, page.limit).map(toRecord), more: rows.length > page.limit };
}

/** An entry with its links in the chain (audit-chain.ts): what a stream's receiver checks continuity with. */
export interface ChainedAuditRecord extends AuditRecord {
  hash: string | null;
  prevHash: string | null;
}

/** Entries after position `seq`, oldest first, at most `limit`: what the audit relay streams next. */
export async function auditEntriesAfter(db: Executor, seq: number, limit: number): Promise<ChainedAuditRecord[]> {
  const rows = await db
    .selectFrom('audit_log')
    .selectAll()
    .where('seq', '>', seq)
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ ...toRecord(row), hash: row.hash, prevHash: row.prev_hash }));
}

function toRecord(row: Selectable<AuditLogTable>): AuditRecord {
  return {
    seq: Number(row.seq), // bigserial comes back from pg as a string
    id: row.id,
    occurredAt: fromDbTime(row.occurred_at),
    actor: { type: row.actor_type, id: row.actor_id },
    action: row.action,
    target: row.target_type !== null && row.target_id !== null ? { type: row.target_type, id: row.target_id } : null,
    outcome: row.outcome,
    requestId: row.request_id,
    sourceAddress: row.source_address,
    details: parseDetails(row.details),
  };
}

function parseDetails(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {}; // written by recordAudit as JSON; never fail a read over one damaged row
  }
}
