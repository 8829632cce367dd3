// The durable inbox: dedupe store and work queue in one table. An entry is recorded (committed)
// before the webhook is acknowledged, then a worker claims entries in arrival order under a lease.
import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, Kysely, Selectable } from 'kysely';
import { migrateInbox, openInboxDatabase, type InboxDatabase, type InboxTables } from './inbox.database.ts';

export interface InboxEntry {
  seq: number;
  source: string;
  deliveryId: string | null;
  eventId: string;
  eventType: string;
  /** The raw JSON text as received (webhook) or the event JSON (reconciliation). */
  body: string;
  via: 'webhook' | 'reconciliation';
  receivedAt: Date;
  attempts: number;
  state: 'pending' | 'done' | 'dead';
  lastError: string | null;
  /** Until when the worker that claimed it holds it; null when nobody does. */
  leaseUntil: Date | null;
  /**
   * The token of the claim that returned this entry (claimNext draws a new one each time). Pass it to
   * complete, retryLater, markDead and renewLease: they then act only while that claim still holds the entry.
   */
  leaseId: string | null;
}

export type NewInboxEntry = Pick<
  InboxEntry,
  'source' | 'deliveryId' | 'eventId' | 'eventType' | 'body' | 'via' | 'receivedAt'
>;

export interface ClaimOptions {
  /**
   * Claim only the oldest due pending entry: when another worker holds it, claim nothing rather than
   * pass it. A starting worker claims this way for one lease period, so an entry whose worker crashed
   * runs again before anything that arrived after it (docs/guides/receiving-webhooks.md, "Inbox and worker").
   */
  inOrder?: boolean;
}

export interface Inbox {
  readonly dialect: 'sqlite' | 'postgres';
  /** 'duplicate' when (source, deliveryId) or (source, eventId) was already recorded; nothing is added then. */
  record(entry: NewInboxEntry): Promise<'recorded' | 'duplicate'>;
  /**
   * The oldest due pending entry (by seq) that nobody holds, leased to the caller for `leaseMs` under a
   * fresh `leaseId`; counts as an attempt.
   */
  claimNext(now: Date, leaseMs: number, options?: ClaimOptions): Promise<InboxEntry | undefined>;
  /**
   * Extends the lease to `until` while the claim `leaseId` still holds the entry (the worker's heartbeat);
   * false when it no longer does: its lease ran out and another claim took the entry, or it was settled.
   */
  renewLease(seq: number, leaseId: string, until: Date): Promise<boolean>;
  /**
   * The writes that settle a claimed entry. With `leaseId`, only while that claim still holds it (false
   * otherwise, and nothing changes); without, unconditionally (an operator's tool).
   */
  complete(seq: number, leaseId?: string): Promise<boolean>;
  retryLater(seq: number, error: string, at: Date, leaseId?: string): Promise<boolean>;
  markDead(seq: number, error: string, leaseId?: string): Promise<boolean>;
  list(filter?: { state?: InboxEntry['state']; source?: string }): Promise<InboxEntry[]>;
  /**
   * Gives dead entries (all, one source's, or the given seqs) a fresh set of attempts, due at `now`,
   * once the consumer has fixed what made its handler fail; returns how many.
   */
  requeueDead(filter: { source?: string; seqs?: number[] }, now: Date): Promise<number>;
  getCursor(source: string): Promise<string | undefined>;
  saveCursor(source: string, cursor: string): Promise<void>;
  /** Deletes done entries received before `before` (retention); returns how many. */
  purgeProcessed(before: Date): Promise<number>;
  close(): Promise<void>;
}

type Row = Selectable<InboxTables['receiver_inbox']>;

// Errors come from the consumer's handler; a bound keeps one runaway message from bloating the table.
const MAX_ERROR_LENGTH = 2000;

function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

function toEntry(row: Row): InboxEntry {
  return {
    seq: Number(row.seq),
    source: row.source,
    deliveryId: row.delivery_id,
    eventId: row.event_id,
    eventType: row.event_type,
    body: row.body,
    via: row.via as InboxEntry['via'],
    receivedAt: toDate(row.received_at),
    attempts: Number(row.attempts),
    state: row.state as InboxEntry['state'],
    lastError: row.last_error,
    leaseUntil: row.lease_until === null ? null : toDate(row.lease_until),
    leaseId: row.lease_id,
  };
}

class KyselyInbox implements Inbox {
  readonly dialect: 'sqlite' | 'postgres';
  readonly #db: Kysely<InboxTables>;

  constructor(handle: InboxDatabase) {
    this.dialect = handle.dialect;
    this.#db = handle.db;
  }

  async record(entry: NewInboxEntry): Promise<'recorded' | 'duplicate'> {
    // ON CONFLICT DO NOTHING (no target) covers both unique indexes, so two concurrent deliveries of
    // one event cannot both be recorded, and neither fails: the loser simply gets no row back.
    const inserted = await this.#db
      .insertInto('receiver_inbox')
      .values({
        source: entry.source,
        delivery_id: entry.deliveryId,
        event_id: entry.eventId,
        event_type: entry.eventType,
        body: entry.body,
        via: entry.via,
        received_at: entry.receivedAt,
        state: 'pending',
        attempts: 0,
        last_error: null,
        next_attempt_at: entry.receivedAt,
        lease_until: null,
        lease_id: null,
      })
      .onConflict((oc) => oc.doNothing())
      .returning('seq')
      .executeTakeFirst();
    return inserted ? 'recorded' : 'duplicate';
  }

  async claimNext(now: Date, leaseMs: number, options: ClaimOptions = {}): Promise<InboxEntry | undefined> {
    const inOrder = options.inOrder === true;
    // One statement, so the pick and the lease are atomic: SQLite runs it under its single writer lock.
    // PostgreSQL workers skip rows another worker is claiming instead of queueing behind them; in order,
    // a worker waits for that claim instead, then finds the entry held and claims nothing.
    const free = (w: ExpressionBuilder<InboxTables, 'receiver_inbox'>) =>
      // A lease that ran out belongs to a worker that crashed (or hung): the entry is free again.
      w.or([w('lease_until', 'is', null), w('lease_until', '<=', now)]);
    const row = await this.#db
      .updateTable('receiver_inbox')
      .set((eb) => ({
        lease_until: new Date(now.getTime() + leaseMs),
        lease_id: randomUUID(),
        attempts: eb('attempts', '+', 1),
      }))
      .where('seq', '=', () =>
        this.#pendingDue(now)
          .$if(!inOrder, (q) => q.where(free))
          .orderBy('seq')
          .limit(1)
          .$if(this.dialect === 'postgres', (q) => (inOrder ? q.forUpdate() : q.forUpdate().skipLocked())),
      )
      .where(free)
      .returningAll()
      .executeTakeFirst();
    return row ? toEntry(row) : undefined;
  }

  #pendingDue(now: Date) {
    return this.#db
      .selectFrom('receiver_inbox')
      .select('seq')
      .where('state', '=', 'pending')
      .where('next_attempt_at', '<=', now);
  }

  async renewLease(seq: number, leaseId: string, until: Date): Promise<boolean> {
    const result = await this.#db
      .updateTable('receiver_inbox')
      .set({ lease_until: until })
      .where('seq', '=', seq)
      .where('state', '=', 'pending')
      .where('lease_id', '=', leaseId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async complete(seq: number, leaseId?: string): Promise<boolean> {
    return this.#settle(seq, leaseId, { state: 'done' });
  }

  async retryLater(seq: number, error: string, at: Date, leaseId?: string): Promise<boolean> {
    return this.#settle(seq, leaseId, {
      state: 'pending',
      last_error: error.slice(0, MAX_ERROR_LENGTH),
      next_attempt_at: at,
    });
  }

  async markDead(seq: number, error: string, leaseId?: string): Promise<boolean> {
    return this.#settle(seq, leaseId, { state: 'dead', last_error: error.slice(0, MAX_ERROR_LENGTH) });
  }

  /** Releases the lease with `changes`; with a leaseId, only if that claim still holds the entry. */
  async #settle(
    seq: number,
    leaseId: string | undefined,
    changes: { state: InboxEntry['state']; last_error?: string; next_attempt_at?: Date },
  ): Promise<boolean> {
    const result = await this.#db
      .updateTable('receiver_inbox')
      .set({ ...changes, lease_until: null, lease_id: null })
      .where('seq', '=', seq)
      .$if(leaseId !== undefined, (q) => q.where('state', '=', 'pending').where('lease_id', '=', leaseId!))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async list(filter: { state?: InboxEntry['state']; source?: string } = {}): Promise<InboxEntry[]> {
    const rows = await this.#db
      .selectFrom('receiver_inbox')
      .selectAll()
      .$if(filter.state !== undefined, (q) => q.where('state', '=', filter.state!))
      .$if(filter.source !== undefined, (q) => q.where('source', '=', filter.source!))
      .orderBy('seq')
      .execute();
    return rows.map(toEntry);
  }

  async requeueDead(filter: { source?: string; seqs?: number[] }, now: Date): Promise<number> {
    if (filter.seqs?.length === 0) return 0;
    // last_error stays: it tells the operator what failed until the next attempt overwrites it.
    const result = await this.#db
      .updateTable('receiver_inbox')
      .set({ state: 'pending', attempts: 0, next_attempt_at: now, lease_until: null, lease_id: null })
      .where('state', '=', 'dead')
      .$if(filter.source !== undefined, (q) => q.where('source', '=', filter.source!))
      .$if(filter.seqs !== undefined, (q) => q.where('seq', 'in', filter.seqs!))
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async getCursor(source: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('receiver_cursors')
      .select('cursor')
      .where('source', '=', source)
      .executeTakeFirst();
    return row?.cursor;
  }

  async saveCursor(source: string, cursor: string): Promise<void> {
    const updatedAt = new Date();
    await this.#db
      .insertInto('receiver_cursors')
      .values({ source, cursor, updated_at: updatedAt })
      .onConflict((oc) => oc.column('source').doUpdateSet({ cursor, updated_at: updatedAt }))
      .execute();
  }

  async purgeProcessed(before: Date): Promise<number> {
    // Only done entries: pending ones are still owed to the handler, dead ones wait for an operator
    // (requeueDead, or `signet receiver requeue`).
    const result = await this.#db
      .deleteFrom('receiver_inbox')
      .where('state', '=', 'done')
      .where('received_at', '<', before)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async close(): Promise<void> {
    await this.#db.destroy();
  }
}

/** 'sqlite:/path/file.db' | 'sqlite::memory:' | 'postgres://…'; creates or upgrades the kit's tables. */
export async function openInbox(url: string): Promise<Inbox> {
  const handle = openInboxDatabase(url);
  try {
    await migrateInbox(handle);
  } catch (error) {
    await handle.db.destroy();
    throw error;
  }
  return new KyselyInbox(handle);
}
