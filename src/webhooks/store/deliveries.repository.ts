// SQL for deliveries and their attempts: leases given back, the next retry's time, the delivery log and
// re-queues. Plain functions over the database or an open transaction. The dispatcher's batched claim
// and record are in dispatch.repository.ts.
import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import type { DbTime, WebhookDeliveriesTable } from '../../db/schema.ts';

export type DeliveryState = WebhookDeliveriesTable['state'];

/** Gives claimed deliveries back at once: still running when a dispatcher stops. */
export async function releaseLeases(db: Executor, ids: string[], leaseToken: string): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('webhook_deliveries')
    .set({ lease_owner: null, lease_until: null })
    .where('id', 'in', ids)
    .where('lease_owner', '=', leaseToken)
    .execute();
}

/**
 * When a pending delivery next becomes claimable (to sleep exactly that long), if any: its retry falls
 * due, or the lease of a claim whose outcome was never recorded (the database was lost meanwhile) expires.
 */
export async function nextDueAt(db: Executor, now: Date): Promise<Date | undefined> {
  const at = toDbTime(now);
  const row = await db
    .selectFrom('webhook_deliveries')
    .select(
      sql<DbTime>`min(case when lease_until > next_attempt_at then lease_until else next_attempt_at end)`.as('due'),
    )
    .where('state', '=', 'pending')
    .where((eb) => eb.or([eb('next_attempt_at', '>', at), eb('lease_until', '>', at)]))
    .executeTakeFirst();
  return row?.due ? fromDbTime(row.due) : undefined;
}

/** An endpoint that is disabled gets nothing more; its waiting deliveries fail (recoverable later). */
export async function failPending(db: Executor, endpointId: string, reason: string, now: Date): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ state: 'failed', last_error: reason, lease_owner: null, lease_until: null, updated_at: toDbTime(now) })
    .where('endpoint_id', '=', endpointId)
    .where('state', '=', 'pending')
    .execute();
}

export interface DeliveryRecord {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  state: DeliveryState;
  attemptCount: number;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The webhook_deliveries columns (as `d`) a delivery view reads; its event's type comes from a join. */
export const DELIVERY_COLUMNS = [
  'd.id',
  'd.event_id',
  'd.endpoint_id',
  'd.state',
  'd.attempt_count',
  'd.next_attempt_at',
  'd.last_status_code',
  'd.last_error',
  'd.created_at',
  'd.updated_at',
] as const;

function deliveryQuery(db: Executor) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .select([...DELIVERY_COLUMNS, 'e.type']);
}

/** A delivery row with its event's type: what deliveryQuery and the admin log (admin-log.repository.ts) read. */
export type DeliveryRow = Awaited<ReturnType<ReturnType<typeof deliveryQuery>['executeTakeFirstOrThrow']>>;

/** The one row → record mapper of deliveries; a pending delivery alone has a next attempt. */
export function toDelivery(r: DeliveryRow): DeliveryRecord {
  return {
    id: r.id,
    eventId: r.event_id,
    eventType: r.type,
    endpointId: r.endpoint_id,
    state: r.state,
    attemptCount: Number(r.attempt_count),
    nextAttemptAt: r.state === 'pending' ? fromDbTime(r.next_attempt_at) : null,
    lastStatusCode: r.last_status_code === null ? null : Number(r.last_status_code),
    lastError: r.last_error,
    createdAt: fromDbTime(r.created_at),
    updatedAt: fromDbTime(r.updated_at),
  };
}

export async function findDelivery(db: Executor, id: string): Promise<DeliveryRecord | undefined> {
  const row = await deliveryQuery(db).where('d.id', '=', id).executeTakeFirst();
  return row && toDelivery(row);
}

interface DeliveryFilter {
  endpointId: string;
  state?: DeliveryState;
  /** Keyset: deliveries created before this one (created_at, id). */
  before?: { createdAt: Date; id: string };
  limit: number;
}

/** Newest first. */
export async function listDeliveries(db: Executor, filter: DeliveryFilter): Promise<DeliveryRecord[]> {
  let query = deliveryQuery(db).where('d.endpoint_id', '=', filter.endpointId);
  if (filter.state) query = query.where('d.state', '=', filter.state);
  const before = filter.before;
  if (before) {
    const at = toDbTime(before.createdAt);
    // A row-value comparison, not `a < x or (a = x and b < y)`: PostgreSQL turns only this form into an
    // index range, so a deep page reads its own rows instead of filtering every newer one (bench/scale/console-scale.ts).
    query = query.where((eb) => eb(eb.refTuple('d.created_at', 'd.id'), '<', eb.tuple(at, before.id)));
  }
  const rows = await query.orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(filter.limit).execute();
  return rows.map(toDelivery);
}

export interface AttemptRecord {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  errorKind: string | null;
  errorDetail: string | null;
  responseExcerpt: string | null;
}

export async function listAttempts(db: Executor, deliveryId: string): Promise<AttemptRecord[]> {
  const rows = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    attempt: Number(r.attempt),
    startedAt: fromDbTime(r.started_at),
    durationMs: Number(r.duration_ms),
    statusCode: r.status_code === null ? null : Number(r.status_code),
    errorKind: r.error_kind,
    errorDetail: r.error_detail,
    responseExcerpt: r.response_excerpt,
  }));
}

/** Manual redelivery: the same delivery (same id) goes out again now, with a fresh retry schedule. */
export async function requeue(db: Executor, id: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ state: 'pending', retry_index: 0, next_attempt_at: toDbTime(now), updated_at: toDbTime(now) })
    .where('id', '=', id)
    .where('state', '!=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Re-queues every failed delivery of an endpoint created since `since`; returns how many. */
export async function requeueFailedSince(db: Executor, endpointId: string, since: Date, now: Date): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ state: 'pending', retry_index: 0, next_attempt_at: toDbTime(now), updated_at: toDbTime(now) })
    .where('endpoint_id', '=', endpointId)
    .where('state', '=', 'failed')
    .where('created_at', '>=', toDbTime(since))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** One client's delivery counts over [since, until) (the admin API's webhook stats). */
interface DeliveryStats {
  /** Attempts started in the window: how each ended. */
  attempts: { succeeded: number; failed: Record<string, number> };
  /** Deliveries created in the window, by their state now (failed: dead, no retry left). */
  deliveries: { pending: number; succeeded: number; dead: number };
}

export async function deliveryStats(db: Executor, owner: string, since: Date, until: Date): Promise<DeliveryStats> {
  const [from, to] = [toDbTime(since), toDbTime(until)];
  // An attempt failed when it carries an error kind (callback-client.ts sets one on every failure).
  const attempts = await db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .innerJoin('webhook_endpoints as en', 'en.id', 'd.endpoint_id')
    .select(['a.error_kind', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('en.owner', '=', owner)
    .where('a.started_at', '>=', from)
    .where('a.started_at', '<', to)
    .groupBy('a.error_kind')
    .execute();
  const deliveries = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as en', 'en.id', 'd.endpoint_id')
    .select(['d.state', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('en.owner', '=', owner)
    .where('d.created_at', '>=', from)
    .where('d.created_at', '<', to)
    .groupBy('d.state')
    .execute();
  const stats: DeliveryStats = {
    attempts: { succeeded: 0, failed: {} },
    deliveries: { pending: 0, succeeded: 0, dead: 0 },
  };
  for (const row of attempts) {
    if (row.error_kind === null) stats.attempts.succeeded += Number(row.n);
    else stats.attempts.failed[row.error_kind] = Number(row.n);
  }
  for (const row of deliveries) stats.deliveries[row.state === 'failed' ? 'dead' : row.state] += Number(row.n);
  return stats;
}
