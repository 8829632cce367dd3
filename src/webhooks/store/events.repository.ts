// Reading the outbox: the event list API (reconciliation) and retention.
//
// Positions: on SQLite the single writer makes `seq` commit order. On PostgreSQL a sequence value is
// taken before commit, so seq 11 can become visible after seq 12; a reader that had moved past 12
// would never see 11. There the order is (tx_id, seq), and only rows of transactions older than every
// transaction still running are listed (pg_snapshot_xmin): no row can later appear before a position
// that was already handed out.
import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dialect, Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';

export interface EventPosition {
  /** PostgreSQL transaction id (xid8 as text); "0" on SQLite. */
  tx: string;
  seq: number;
}

export const START: EventPosition = { tx: '0', seq: 0 };

export interface EventRecord {
  id: string;
  type: string;
  occurredAt: Date;
  dataJson: string;
  position: EventPosition;
}

/**
 * Who is reading: a client sees every order event and its own endpoint events; an end user, the events of their
 * own orders; a client's customer (a customer-scoped portal), the events of that customer's orders and of that
 * customer's own endpoints.
 */
export interface EventReader {
  /** The client; undefined for an end user, who sees no endpoint events. */
  owner: string | undefined;
  customerId: string | undefined;
}

interface EventQuery {
  after: EventPosition;
  types: string[] | undefined;
  limit: number;
}

function baseQuery(db: Executor, dialect: Dialect) {
  const columns = ['seq', 'id', 'type', 'occurred_at', 'data'] as const;
  const query = db.selectFrom('webhook_events').select(columns);
  return dialect === 'postgres'
    ? query.select(sql<string>`tx_id::text`.as('tx'))
    : query.select(sql<string>`'0'`.as('tx'));
}

function visibleTo(reader: EventReader) {
  return (eb: ExpressionBuilder<Database, 'webhook_events'>) => {
    const { owner, customerId } = reader;
    if (owner === undefined) return eb.and([eb('owner', 'is', null), eb('customer_id', '=', customerId ?? null)]);
    if (customerId === undefined) return eb.or([eb('owner', '=', owner), eb('owner', 'is', null)]);
    // The customer's order events, and the client's events about the customer's endpoints (test events, pings).
    return eb.and([eb('customer_id', '=', customerId), eb.or([eb('owner', 'is', null), eb('owner', '=', owner)])]);
  };
}

type EventRow = { seq: number; id: string; type: string; occurred_at: string | Date; data: string; tx: string };

function toRecord(r: EventRow): EventRecord {
  return {
    id: r.id,
    type: r.type,
    occurredAt: fromDbTime(r.occurred_at),
    dataJson: r.data,
    position: { tx: r.tx, seq: Number(r.seq) },
  };
}

export async function listEvents(
  db: Executor,
  dialect: Dialect,
  reader: EventReader,
  q: EventQuery,
): Promise<EventRecord[]> {
  let query = baseQuery(db, dialect).where(visibleTo(reader));
  if (q.types) query = query.where('type', 'in', q.types);
  if (dialect === 'postgres') {
    query = query
      .where(sql<boolean>`tx_id < pg_snapshot_xmin(pg_current_snapshot())`)
      .where(sql<boolean>`(tx_id, seq) > (${q.after.tx}::xid8, ${q.after.seq})`)
      .orderBy(sql`tx_id`)
      .orderBy('seq');
  } else {
    query = query.where('seq', '>', q.after.seq).orderBy('seq');
  }
  const rows = (await query.limit(q.limit).execute()) as EventRow[];
  return rows.map(toRecord);
}

export async function findEvent(
  db: Executor,
  dialect: Dialect,
  reader: EventReader,
  id: string,
): Promise<EventRecord | undefined> {
  const row = (await baseQuery(db, dialect).where(visibleTo(reader)).where('id', '=', id).executeTakeFirst()) as
    EventRow | undefined;
  return row && toRecord(row);
}

/**
 * Retention works in bounded batches: a purge after a long outage (or the first one on a large table)
 * must not hold the writer. On SQLite a statement runs on the event loop and holds the single write
 * lock until it ends, so an unbounded DELETE of a month's deliveries would stall every request for
 * seconds; on PostgreSQL it would hold row locks and risk the statement timeout. Each statement here
 * touches at most PURGE_BATCH.events events or PURGE_BATCH.deliveries deliveries (with their attempts,
 * by cascade: at most one per step of the retry schedule), and the purge yields to the event loop
 * between statements, so requests queued behind it run in between.
 */
const PURGE_BATCH = { events: 200, deliveries: 200 };

/** Where a purge has got to: the last expired event it looked at, in (occurred_at, seq) order. */
interface PurgeMark {
  occurredAt: string | Date;
  seq: number;
}

/**
 * Deletes events older than the cutoff (with their deliveries and attempts) unless a delivery still
 * waits; the number of events deleted. Batches run in (occurred_at, seq) order from a keyset, so an
 * event that is kept (a delivery still waits) is read once, not once per batch.
 */
export async function purgeEvents(db: Executor, cutoff: Date, batch = PURGE_BATCH): Promise<number> {
  let total = 0;
  let mark: PurgeMark | undefined;
  for (;;) {
    const expired = await expiredEvents(db, toDbTime(cutoff), mark, batch.events);
    if (expired.length === 0) return total;
    const ids = expired.map((e) => e.id);
    await purgeDeliveriesOf(db, ids, batch.deliveries);
    const result = await db.deleteFrom('webhook_events').where('id', 'in', settled(db, ids)).executeTakeFirst();
    total += Number(result.numDeletedRows);
    if (expired.length < batch.events) return total;
    const last = expired[expired.length - 1]!;
    mark = { occurredAt: last.occurred_at, seq: Number(last.seq) };
    await yieldToEventLoop();
  }
}

/**
 * The next expired events after `mark`. `occurred_at >= mark` bounds the index range scan (a row
 * value alone is not an index condition on PostgreSQL's single-column webhook_events_occurred_idx),
 * the row value skips the events already seen (https://sqlite.org/rowvalue.html).
 */
async function expiredEvents(db: Executor, cutoff: string | Date, mark: PurgeMark | undefined, limit: number) {
  let query = db.selectFrom('webhook_events').select(['id', 'seq', 'occurred_at']).where('occurred_at', '<', cutoff);
  if (mark)
    query = query
      .where('occurred_at', '>=', mark.occurredAt)
      .where(sql<boolean>`(occurred_at, seq) > (${mark.occurredAt}, ${mark.seq})`);
  return query.orderBy('occurred_at').orderBy('seq').limit(limit).execute();
}

/**
 * Of these events, those no delivery waits for (a waiting one keeps its event and its whole log).
 * The state is compared as an expression, not as the bare column: SQLite (no ANALYZE statistics) then
 * looked each event's pending deliveries up by webhook_deliveries_state_created_idx, reading every
 * pending delivery of every endpoint once per event (EXPLAIN QUERY PLAN: `SEARCH p USING INDEX
 * webhook_deliveries_state_created_idx (state=?)`); now it reads the event's own few through the
 * (event_id, endpoint_id) key (`USING INDEX sqlite_autoindex_webhook_deliveries_2 (event_id=?)`).
 */
function settled(db: Executor, ids: string[]) {
  return db
    .selectFrom('webhook_events as e')
    .select('e.id')
    .where('e.id', 'in', ids)
    .where((w) =>
      w.not(
        w.exists(
          w
            .selectFrom('webhook_deliveries as p')
            .select('p.id')
            .whereRef('p.event_id', '=', 'e.id')
            .where(sql<string>`p.state || ''`, '=', 'pending'),
        ),
      ),
    );
}

/** The deliveries of the settled ones among `eventIds`, at most `limit` per statement. */
async function purgeDeliveriesOf(db: Executor, eventIds: string[], limit: number): Promise<void> {
  for (;;) {
    const chunk = db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('event_id', 'in', settled(db, eventIds))
      .limit(limit);
    const result = await db.deleteFrom('webhook_deliveries').where('id', 'in', chunk).executeTakeFirst();
    if (Number(result.numDeletedRows) < limit) return;
    await yieldToEventLoop();
  }
}

/** A macrotask turn: node:sqlite runs statements synchronously, so awaiting them alone never lets I/O in. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
