// SQL for deliveries and their attempts: claiming due work under a lease, recording outcomes, and the
// delivery log. Plain functions over the database or an open transaction.
import type { Dialect, Executor } from '../db/database.ts';
import { fromDbTime, toDbTime } from '../db/codecs.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from '../db/schema.ts';
import type { AttemptResult } from './delivery.http.ts';

export type DeliveryState = WebhookDeliveriesTable['state'];

export interface ClaimRequest {
  now: Date;
  leaseUntil: Date;
  leaseToken: string;
  limit: number;
  /** Endpoints this dispatcher already has enough in flight for. */
  skipEndpoints: string[];
}

/**
 * Claims up to `limit` due deliveries in one statement. PostgreSQL: the inner SELECT … FOR UPDATE SKIP
 * LOCKED lets concurrent dispatchers take disjoint rows, and a row another one just leased fails the
 * re-checked WHERE. SQLite: one writer, so the UPDATE is atomic by itself. A lease that expired (its
 * dispatcher died mid-delivery) makes the row claimable again.
 */
export async function claimDue(db: Executor, dialect: Dialect, claim: ClaimRequest): Promise<{ id: string; endpointId: string }[]> {
  const now = toDbTime(claim.now);
  const rows = await db
    .updateTable('webhook_deliveries')
    .set({ lease_owner: claim.leaseToken, lease_until: toDbTime(claim.leaseUntil) })
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('state', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', now)]));
      if (claim.skipEndpoints.length > 0) due = due.where('endpoint_id', 'not in', claim.skipEndpoints);
      due = due.orderBy('next_attempt_at').limit(claim.limit);
      return dialect === 'postgres' ? due.forUpdate().skipLocked() : due;
    })
    .returning(['id', 'endpoint_id'])
    .execute();
  return rows.map((r) => ({ id: r.id, endpointId: r.endpoint_id }));
}

/** Gives claimed deliveries back at once: more than an endpoint may take, or still running at shutdown. */
export async function releaseLeases(db: Executor, ids: string[], leaseToken: string): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('webhook_deliveries').set({ lease_owner: null, lease_until: null }).where('id', 'in', ids).where('lease_owner', '=', leaseToken).execute();
}

export interface SendableDelivery {
  id: string;
  retryIndex: number;
  attemptCount: number;
  eventId: string;
  eventType: string;
  occurredAt: Date;
  dataJson: string;
  endpointId: string;
  url: string;
  sealedSecret: string;
  sealedPreviousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

export async function loadSendable(db: Executor, ids: string[]): Promise<SendableDelivery[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select(['d.id', 'd.retry_index', 'd.attempt_count', 'e.id as event_id', 'e.type', 'e.occurred_at', 'e.data', 'w.id as endpoint_id', 'w.url', 'w.secret', 'w.previous_secret', 'w.previous_secret_expires_at'])
    .where('d.id', 'in', ids)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    retryIndex: Number(r.retry_index),
    attemptCount: Number(r.attempt_count),
    eventId: r.event_id,
    eventType: r.type,
    occurredAt: fromDbTime(r.occurred_at),
    dataJson: r.data,
    endpointId: r.endpoint_id,
    url: r.url,
    sealedSecret: r.secret,
    sealedPreviousSecret: r.previous_secret,
    previousSecretExpiresAt: r.previous_secret_expires_at === null ? null : fromDbTime(r.previous_secret_expires_at),
  }));
}

export interface Outcome {
  deliveryId: string;
  endpointId: string;
  leaseToken: string;
  attempt: number;
  startedAt: Date;
  result: AttemptResult;
  /** pending (retry at nextAttemptAt), succeeded or failed. */
  state: DeliveryState;
  retryIndex: number;
  nextAttemptAt: Date;
}

/** Records one attempt and moves the delivery on, if this claim still holds its lease. */
export async function recordOutcome(trx: Executor, outcome: Outcome, now: Date): Promise<void> {
  const { result } = outcome;
  const updated = await trx
    .updateTable('webhook_deliveries')
    .set({
      state: outcome.state,
      attempt_count: outcome.attempt,
      retry_index: outcome.retryIndex,
      next_attempt_at: toDbTime(outcome.nextAttemptAt),
      lease_owner: null,
      lease_until: null,
      last_status_code: result.statusCode,
      last_error: result.errorDetail,
      updated_at: toDbTime(now),
    })
    .where('id', '=', outcome.deliveryId)
    .where('lease_owner', '=', outcome.leaseToken)
    .executeTakeFirst();
  // The lease was lost (it expired and another dispatcher took over): the attempt still happened and is
  // logged, but the other claim decides the delivery's state. Gone entirely (endpoint deleted): nothing to log.
  if (Number(updated.numUpdatedRows) === 0) {
    const exists = await trx.selectFrom('webhook_deliveries').select('id').where('id', '=', outcome.deliveryId).executeTakeFirst();
    if (!exists) return;
  }
  await trx.insertInto('webhook_attempts').values(attemptRow(outcome)).execute();
}

function attemptRow(outcome: Outcome): Omit<WebhookAttemptsTable, 'id'> {
  const { result } = outcome;
  return {
    delivery_id: outcome.deliveryId,
    attempt: outcome.attempt,
    started_at: toDbTime(outcome.startedAt),
    duration_ms: result.durationMs,
    status_code: result.statusCode,
    error_kind: result.errorKind,
    error_detail: result.errorDetail,
    response_excerpt: result.responseExcerpt,
  };
}

/** When the next scheduled retry falls due (to sleep exactly that long), if any. */
export async function nextDueAt(db: Executor, now: Date): Promise<Date | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min('next_attempt_at').as('due'))
    .where('state', '=', 'pending')
    .where('next_attempt_at', '>', toDbTime(now))
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

function deliveryQuery(db: Executor) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .select(['d.id', 'd.event_id', 'e.type', 'd.endpoint_id', 'd.state', 'd.attempt_count', 'd.next_attempt_at', 'd.last_status_code', 'd.last_error', 'd.created_at', 'd.updated_at']);
}

type DeliveryRow = Awaited<ReturnType<ReturnType<typeof deliveryQuery>['executeTakeFirstOrThrow']>>;

function toDelivery(r: DeliveryRow): DeliveryRecord {
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

export interface DeliveryFilter {
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
    query = query.where((eb) => eb.or([eb('d.created_at', '<', at), eb.and([eb('d.created_at', '=', at), eb('d.id', '<', before.id)])]));
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
  const rows = await db.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('id').execute();
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
