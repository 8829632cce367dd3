// Streams the audit trail out (docs/security.md, "Streaming the audit trail"): each entry becomes an `audit.entry`
// event on the webhook outbox, addressed to the endpoints an admin registered for it, and is then delivered signed,
// retried and logged like any event: at least once, so a SIEM misses nothing.
//
// A relay rather than a write in recordAudit: entries are appended on hot paths (every sign-in) by every feature,
// which this keeps free of the outbox. The relay reads the entries after the position it stored, in append order
// (`seq`: appends are serialised until commit, src/audit/audit-chain.ts, so an entry never commits behind one
// already read), and records their events and its new position in one transaction: each entry becomes one event,
// whichever instance relays and whatever crashes. Instances take turns on the position row (FOR UPDATE on
// PostgreSQL; SQLite has a single writer).
import type { FastifyBaseLogger as BaseLogger } from 'fastify';
import { auditEntriesAfter, type ChainedAuditRecord } from '../../audit/audit.repository.ts';
import { auditView } from '../../audit/audit-view.ts';
import { executorDialect } from '../../db/database.ts';
import type { Db, Executor } from '../../db/executor.ts';
import { OPERATOR_OWNER } from './events.catalogue.ts';
import type { Outbox } from './events.outbox.ts';

/** The row of audit_stream this relay keeps its position in (migration 0018). */
const RELAY_NAME = 'webhooks';
/** Entries per transaction: a burst is relayed in several short transactions rather than one long one. */
const BATCH = 200;
/** Batches per round at most, so one round ends even while entries keep coming; the next round goes on. */
const BATCHES_PER_ROUND = 10;
/** How often a dispatching process looks for new entries: an entry waits at most this long to be streamed. */
export const AUDIT_RELAY_INTERVAL_MS = 1000;

/** The event's Data: the entry as GET /api/admin/audit shows it, with its place in the hash chain. */
export function auditEntryData(entry: ChainedAuditRecord) {
  return { ...auditView(entry), Seq: entry.seq, Hash: entry.hash, PreviousHash: entry.prevHash };
}

/** Turns the next entries (at most `limit`) into events; the number of entries relayed. */
export async function relayAuditEntries(db: Db, outbox: Outbox, limit = BATCH): Promise<number> {
  // Read first: a write transaction every second would take SQLite's single write lock from the CLI and the
  // other processes for nothing, and an idle relay is the usual case.
  if (!(await anythingToRelay(db))) return 0;
  return db.transaction().execute(async (trx) => {
    const position = await takePosition(trx);
    if (!(await anyOperatorEndpoint(trx))) return 0; // the last one was disabled or deleted meanwhile
    const entries = await auditEntriesAfter(trx, position, limit);
    for (const entry of entries)
      await outbox.record(trx, {
        type: 'audit.entry',
        data: auditEntryData(entry),
        occurredAt: entry.occurredAt,
        owner: OPERATOR_OWNER,
      });
    if (entries.length > 0) await storePosition(trx, entries.at(-1)!.seq);
    return entries.length;
  });
}

/**
 * The stream runs while an operator endpoint is enabled and pauses (keeping its position) while none is: an endpoint
 * enabled again receives what was appended meanwhile. The first one registered starts the stream at the newest
 * entry instead (startAuditStream): it receives what is appended from then on.
 */
async function anythingToRelay(db: Executor): Promise<boolean> {
  if (!(await anyOperatorEndpoint(db))) return false;
  const position = await db
    .selectFrom('audit_stream')
    .select('last_seq')
    .where('name', '=', RELAY_NAME)
    .executeTakeFirst();
  const next = await db
    .selectFrom('audit_log')
    .select('seq')
    .where('seq', '>', Number(position?.last_seq ?? 0))
    .limit(1)
    .executeTakeFirst();
  return next !== undefined;
}

/**
 * Called in the transaction that registers an operator endpoint, before its audit entry: when it is the only enabled
 * one, the stream starts after the newest entry, so it does not receive the trail's past (GET /api/admin/audit has
 * it), only what is appended from now on, its own registration first.
 */
export async function startAuditStream(trx: Executor, endpointId: string): Promise<void> {
  if (await anyOperatorEndpoint(trx, endpointId)) return;
  const position = await takePosition(trx);
  const newest = await trx.selectFrom('audit_log').select('seq').orderBy('seq', 'desc').limit(1).executeTakeFirst();
  if (newest && Number(newest.seq) > position) await storePosition(trx, Number(newest.seq));
}

async function storePosition(trx: Executor, seq: number): Promise<void> {
  await trx.updateTable('audit_stream').set({ last_seq: seq }).where('name', '=', RELAY_NAME).execute();
}

/** The stored position, locked until the transaction ends (PostgreSQL): a second relay waits, then reads past it. */
async function takePosition(trx: Executor): Promise<number> {
  let query = trx.selectFrom('audit_stream').select('last_seq').where('name', '=', RELAY_NAME);
  if (executorDialect(trx) === 'postgres') query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (row) return Number(row.last_seq);
  await trx.insertInto('audit_stream').values({ name: RELAY_NAME, last_seq: 0 }).execute();
  return 0;
}

/** Whether an enabled operator endpoint exists (other than `except`). */
async function anyOperatorEndpoint(db: Executor, except?: string): Promise<boolean> {
  let query = db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('owner', '=', OPERATOR_OWNER)
    .where('enabled', '=', 1);
  if (except !== undefined) query = query.where('id', '!=', except);
  return (await query.limit(1).executeTakeFirst()) !== undefined;
}

/** Relays every AUDIT_RELAY_INTERVAL_MS in a process that dispatches, until stopped. */
export class AuditRelay {
  readonly #db: Db;
  readonly #outbox: Outbox;
  readonly #log: BaseLogger;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #stopped = false;

  constructor(db: Db, outbox: Outbox, log: BaseLogger) {
    this.#db = db;
    this.#outbox = outbox;
    this.#log = log;
  }

  start(): void {
    this.#schedule();
  }

  /** No new round starts; the one running finishes (its transaction commits or rolls back). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#round = this.#relayRound().finally(() => this.#schedule());
    }, AUDIT_RELAY_INTERVAL_MS).unref();
  }

  async #relayRound(): Promise<void> {
    try {
      for (let batch = 0; batch < BATCHES_PER_ROUND && !this.#stopped; batch += 1)
        if ((await relayAuditEntries(this.#db, this.#outbox)) < BATCH) return;
    } catch (err) {
      // The position did not move: the same entries are tried again next round.
      this.#log.warn({ err }, 'relaying audit entries to the webhook outbox failed');
    }
  }
}
