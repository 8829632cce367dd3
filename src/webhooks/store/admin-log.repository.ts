// SQL for the operators' delivery log and event browser across every client (docs/guides/admin-api.md,
// Delivery log and events). Keyset pages only, newest first: a page costs the rows it returns (plus
// those a filter skips), never an OFFSET or a COUNT over the table. Indexes: 0011-admin-delivery-indexes.
import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import { DELIVERY_COLUMNS, toDelivery } from './deliveries.repository.ts';
import type { DeliveryRecord, DeliveryRow, DeliveryState } from './deliveries.repository.ts';

/** A position in a newest-first list: rows strictly older than (time, tiebreak). */
export interface Before<K> {
  at: Date;
  key: K;
}

export interface AdminDeliveryFilter {
  /** Only these endpoints (endpoint_id, or every endpoint of client_id); an empty list matches nothing. */
  endpointIds?: readonly string[];
  eventId?: string;
  state?: DeliveryState;
  eventType?: string;
  since?: Date;
  until?: Date;
  before?: Before<string>;
  limit: number;
}

/** A delivery with the client that owns its endpoint. */
export interface AdminDeliveryRecord extends DeliveryRecord {
  owner: string;
}

/** The owner's mapper (deliveries.repository.ts) with the owner the admin view names. */
function toAdminDelivery(r: DeliveryRow & { owner: string }): AdminDeliveryRecord {
  return { ...toDelivery(r), owner: r.owner };
}

/** The ids of one client's endpoints (at most 50: MAX_ENDPOINTS_PER_OWNER), on (owner, created_at). */
export async function endpointIdsOf(db: Executor, owner: string): Promise<string[]> {
  const rows = await db.selectFrom('webhook_endpoints').select('id').where('owner', '=', owner).execute();
  return rows.map((r) => r.id);
}

export async function findAdminDelivery(db: Executor, id: string): Promise<AdminDeliveryRecord | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .innerJoin('webhook_endpoints as en', 'en.id', 'd.endpoint_id')
    .select([...DELIVERY_COLUMNS, 'e.type', 'en.owner'])
    .where('d.id', '=', id)
    .executeTakeFirst();
  return row && toAdminDelivery(row);
}

/**
 * One page of deliveries on their own table, so each planner walks an index in the page's order
 * ((state | endpoint_id, created_at, id)) and stops at the limit; the event type is a probe per row.
 */
function deliveryPage(db: Executor, filter: AdminDeliveryFilter, endpointId?: string) {
  let query = db.selectFrom('webhook_deliveries as d').select(DELIVERY_COLUMNS);
  if (endpointId !== undefined) query = query.where('d.endpoint_id', '=', endpointId);
  if (filter.eventId !== undefined) query = query.where('d.event_id', '=', filter.eventId);
  if (filter.state !== undefined) query = query.where('d.state', '=', filter.state);
  const type = filter.eventType;
  // A scalar subquery, not EXISTS: SQLite would build a Bloom filter over every event first.
  if (type !== undefined)
    query = query.where(
      (eb) => eb.selectFrom('webhook_events as t').select('t.type').whereRef('t.id', '=', 'd.event_id'),
      '=',
      type,
    );
  if (filter.since) query = query.where('d.created_at', '>=', toDbTime(filter.since));
  if (filter.until) query = query.where('d.created_at', '<', toDbTime(filter.until));
  const before = filter.before;
  if (before) {
    // `created_at <= t` is the range an index can seek to; the OR only breaks ties within t.
    const at = toDbTime(before.at);
    query = query
      .where('d.created_at', '<=', at)
      .where((eb) => eb.or([eb('d.created_at', '<', at), eb('d.id', '<', before.key)]));
  }
  return query.orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(filter.limit);
}

/**
 * Newest first. Narrowed to endpoints (at most 50 per client), each endpoint's own newest rows come from
 * its (endpoint_id, created_at, id) index and are merged: the cost is endpoints × limit whatever the
 * table holds, where one scan of the global order would skip every other client's rows. The event type
 * and the owner are joined to the page only.
 */
export async function listAdminDeliveries(db: Executor, filter: AdminDeliveryFilter): Promise<AdminDeliveryRecord[]> {
  const ids = filter.endpointIds;
  if (ids?.length === 0) return [];
  // SQLite allows no ORDER BY or LIMIT inside a compound SELECT's arms: each arm is a subquery.
  const arm = (id: string | undefined) => db.selectFrom(deliveryPage(db, filter, id).as('a')).selectAll();
  let page = arm(ids?.[0]);
  for (const id of ids?.slice(1) ?? []) page = page.unionAll(arm(id));
  // Merged and cut to the page before the joins: SQLite would otherwise run them in every arm.
  const merged = db
    .selectFrom(page.as('u'))
    .selectAll()
    .orderBy('u.created_at', 'desc')
    .orderBy('u.id', 'desc')
    .limit(filter.limit);
  // CROSS JOIN keeps the page as SQLite's outer loop (it would scan every endpoint otherwise); PostgreSQL
  // plans it as the inner join it is.
  const rows = await db
    .selectFrom(merged.as('p'))
    .crossJoin('webhook_events as e')
    .crossJoin('webhook_endpoints as en')
    .whereRef('e.id', '=', 'p.event_id')
    .whereRef('en.id', '=', 'p.endpoint_id')
    .selectAll('p')
    .select(['e.type', 'en.owner'])
    .orderBy('p.created_at', 'desc')
    .orderBy('p.id', 'desc')
    .limit(filter.limit)
    .execute();
  return rows.map(toAdminDelivery);
}

export interface AdminEventFilter {
  types?: readonly string[];
  orderId?: number;
  since?: Date;
  until?: Date;
  before?: Before<number>;
  limit: number;
}

export interface AdminEventRecord {
  seq: number;
  id: string;
  type: string;
  occurredAt: Date;
  dataJson: string;
  owner: string | null;
  orderId: number | null;
}

const EVENT_COLUMNS = ['seq', 'id', 'type', 'occurred_at', 'data', 'owner', 'order_id'] as const;

type EventRow = {
  seq: number | string;
  id: string;
  type: string;
  occurred_at: string | Date;
  data: string;
  owner: string | null;
  order_id: number | string | null;
};

function toEvent(r: EventRow): AdminEventRecord {
  return {
    seq: Number(r.seq),
    id: r.id,
    type: r.type,
    occurredAt: fromDbTime(r.occurred_at),
    dataJson: r.data,
    owner: r.owner,
    orderId: r.order_id === null ? null : Number(r.order_id),
  };
}

/**
 * Newest first by (occurred_at, seq). A browser, not the reconciliation list (events.repository.ts): on
 * PostgreSQL an event committed late with an earlier time can land behind a page already read.
 */
export async function listAdminEvents(db: Executor, filter: AdminEventFilter): Promise<AdminEventRecord[]> {
  let query = db.selectFrom('webhook_events').select(EVENT_COLUMNS);
  if (filter.types) query = query.where('type', 'in', filter.types);
  if (filter.orderId !== undefined) query = query.where('order_id', '=', filter.orderId);
  if (filter.since) query = query.where('occurred_at', '>=', toDbTime(filter.since));
  if (filter.until) query = query.where('occurred_at', '<', toDbTime(filter.until));
  const before = filter.before;
  if (before) {
    const at = toDbTime(before.at);
    query = query
      .where('occurred_at', '<=', at)
      .where((eb) => eb.or([eb('occurred_at', '<', at), eb('seq', '<', before.key)]));
  }
  const rows = await query.orderBy('occurred_at', 'desc').orderBy('seq', 'desc').limit(filter.limit).execute();
  return rows.map(toEvent);
}

export async function findAdminEvent(db: Executor, id: string): Promise<AdminEventRecord | undefined> {
  const row = await db.selectFrom('webhook_events').select(EVENT_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toEvent(row);
}

export type StateCounts = Record<DeliveryState, number>;

/** Each event's deliveries by state: one grouped read on the (event_id, endpoint_id) unique index. */
export async function deliveryStatesOf(db: Executor, eventIds: readonly string[]): Promise<Map<string, StateCounts>> {
  const counts = new Map<string, StateCounts>(eventIds.map((id) => [id, { pending: 0, succeeded: 0, failed: 0 }]));
  if (eventIds.length === 0) return counts;
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'state', sql<number | string>`count(*)`.as('n')])
    .where('event_id', 'in', eventIds)
    .groupBy(['event_id', 'state'])
    .execute();
  for (const row of rows) counts.get(row.event_id)![row.state] = Number(row.n);
  return counts;
}
