// Reading the outbox: the event list API (reconciliation) and retention.
//
// Positions: on SQLite the single writer makes `seq` commit order. On PostgreSQL a sequence value is
// taken before commit, so seq 11 can become visible after seq 12; a reader that had moved past 12
// would never see 11. There the order is (tx_id, seq), and only rows of transactions older than every
// transaction still running are listed (pg_snapshot_xmin): no row can later appear before a position
// that was already handed out.
import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dialect, Executor } from '../../db/database.ts';
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

/** Who is reading: a client sees every order event and its own endpoint events; an end user, the events of their own orders. */
export interface EventReader {
  /** The client; undefined for an end user, who sees no endpoint events. */
  owner: string | undefined;
  customerId: string | undefined;
}

export interface EventQuery {
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
    const orders =
      reader.customerId === undefined
        ? eb('owner', 'is', null)
        : eb.and([eb('owner', 'is', null), eb('customer_id', '=', reader.customerId)]);
    return reader.owner === undefined ? orders : eb.or([eb('owner', '=', reader.owner), orders]);
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

/** Deletes events older than the cutoff (with their deliveries and attempts) unless a delivery still waits. */
export async function purgeEvents(db: Executor, cutoff: Date): Promise<number> {
  const old = db
    .selectFrom('webhook_events as e')
    .select('e.id')
    .where('e.occurred_at', '<', toDbTime(cutoff))
    .where((w) =>
      w.not(
        w.exists(
          w
            .selectFrom('webhook_deliveries as p')
            .select('p.id')
            .whereRef('p.event_id', '=', 'e.id')
            .where('p.state', '=', 'pending'),
        ),
      ),
    );
  await db.deleteFrom('webhook_deliveries').where('event_id', 'in', old).execute();
  const result = await db.deleteFrom('webhook_events').where('id', 'in', old).executeTakeFirst();
  return Number(result.numDeletedRows);
}
