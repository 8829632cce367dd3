// The dispatcher's hot path in SQL: claim a batch of due deliveries (with what sending them needs) and
// record a batch of outcomes. Each is one fixed statement text per dialect, whatever the batch size:
// the lists travel as one JSON parameter (SQLite json_each, PostgreSQL jsonb_to_recordset), so the
// statement is prepared once and the batch costs one round trip instead of one per delivery.
import { sql } from 'kysely';
import type { Dialect, Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import type { DbTime } from '../../db/schema.ts';
import type { AttemptResult } from '../delivery/callback-client.ts';
import type { DeliveryState } from './deliveries.repository.ts';

export interface ClaimRequest {
  now: Date;
  leaseUntil: Date;
  leaseToken: string;
  /** How many this dispatcher has room for. */
  limit: number;
  /** The most one endpoint may have in flight at once (WEBHOOK_ENDPOINT_CONCURRENCY). */
  endpointLimit: number;
  /** What this dispatcher already has in flight, per endpoint. */
  inFlight: ReadonlyMap<string, number>;
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

/** How far past `limit` the claim looks for due work, so endpoints at their limit do not hide the others. */
const CANDIDATES_PER_SLOT = 4;

const SENDABLE_COLUMNS = sql`d.id, d.retry_index, d.attempt_count, e.id as event_id, e.type, e.occurred_at, e.data,
  w.id as endpoint_id, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at`;

/** A delivery as the claim reads it back, with its event and endpoint (and as a hand-off has it in memory). */
interface SendableRow {
  id: string;
  retry_index: number;
  attempt_count: number;
  event_id: string;
  type: string;
  occurred_at: DbTime;
  data: string;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: DbTime | null;
}

/**
 * Leases up to `limit` due deliveries and returns them ready to send: due, free (or their lease expired:
 * that dispatcher died), oldest first, at most `endpointLimit` in flight per endpoint. The candidate
 * window is bounded, so a deep backlog costs the same as a short one.
 */
export async function claimBatch(db: Executor, dialect: Dialect, r: ClaimRequest): Promise<SendableDelivery[]> {
  const rows = dialect === 'postgres' ? await claimOnPostgres(db, r) : await claimOnSqlite(db, r);
  return rows.map(toSendable);
}

/**
 * One statement: candidates locked FOR UPDATE SKIP LOCKED (rows another dispatcher is claiming are
 * skipped, and a locked row's WHERE is re-checked on its newest version, so a delivery just leased
 * elsewhere is never taken twice), ranked per endpoint, leased, and joined to what sending needs.
 */
async function claimOnPostgres(db: Executor, r: ClaimRequest): Promise<SendableRow[]> {
  const now = toDbTime(r.now);
  const inFlight = JSON.stringify([...r.inFlight].map(([endpointId, n]) => ({ endpoint_id: endpointId, n })));
  const { rows } = await sql<SendableRow>`
    with in_flight as (select endpoint_id, n from jsonb_to_recordset(${inFlight}::jsonb) as i(endpoint_id text, n int)),
    candidates as (
      select id, endpoint_id, next_attempt_at from webhook_deliveries
      where state = 'pending' and next_attempt_at <= ${now} and (lease_until is null or lease_until < ${now})
        and endpoint_id not in (select endpoint_id from in_flight where n >= ${r.endpointLimit})
      order by next_attempt_at limit ${r.limit * CANDIDATES_PER_SLOT}
      for update skip locked),
    ranked as (
      select id, endpoint_id, next_attempt_at, row_number() over (partition by endpoint_id order by next_attempt_at, id) as endpoint_rank
      from candidates),
    chosen as (
      select ranked.id from ranked left join in_flight on in_flight.endpoint_id = ranked.endpoint_id
      where ranked.endpoint_rank <= ${r.endpointLimit} - coalesce(in_flight.n, 0)
      order by ranked.next_attempt_at limit ${r.limit}),
    claimed as (
      update webhook_deliveries set lease_owner = ${r.leaseToken}, lease_until = ${toDbTime(r.leaseUntil)}
      where id in (select id from chosen)
      returning id, retry_index, attempt_count, event_id, endpoint_id, next_attempt_at)
    select ${SENDABLE_COLUMNS} from claimed d
    join webhook_events e on e.id = d.event_id join webhook_endpoints w on w.id = d.endpoint_id
    order by d.next_attempt_at`.execute(db);
  return rows;
}

/**
 * Read the candidates with what sending needs, choose within the endpoint limits, then lease the chosen
 * ones where they are still free: another process on the same file may have leased some in between,
 * and the UPDATE's re-check leaves those out. (A window function in SQL costs SQLite more than this.)
 */
async function claimOnSqlite(db: Executor, r: ClaimRequest): Promise<SendableRow[]> {
  const now = toDbTime(r.now);
  const saturated = JSON.stringify(
    [...r.inFlight].filter(([, n]) => n >= r.endpointLimit).map(([endpointId]) => endpointId),
  );
  const { rows: candidates } = await sql<SendableRow>`
    select ${SENDABLE_COLUMNS} from webhook_deliveries d
    join webhook_events e on e.id = d.event_id join webhook_endpoints w on w.id = d.endpoint_id
    where d.state = 'pending' and d.next_attempt_at <= ${now} and (d.lease_until is null or d.lease_until < ${now})
      and d.endpoint_id not in (select value from json_each(${saturated}))
    order by d.next_attempt_at limit ${r.limit * CANDIDATES_PER_SLOT}`.execute(db);
  const chosen = withinEndpointLimits(candidates, r);
  if (chosen.length === 0) return [];
  const { rows: leased } = await sql<{ id: string }>`
    update webhook_deliveries set lease_owner = ${r.leaseToken}, lease_until = ${toDbTime(r.leaseUntil)}
    where id in (select value from json_each(${JSON.stringify(chosen.map((c) => c.id))}))
      and +state = 'pending' and (lease_until is null or lease_until < ${now})
    returning id`.execute(db);
  // `+state`: look the chosen rows up by id; the due index would scan every pending row.
  const ids = new Set(leased.map((l) => l.id));
  return chosen.filter((c) => ids.has(c.id));
}

/** Oldest first, at most `endpointLimit` minus what is in flight per endpoint, `limit` in all. */
function withinEndpointLimits<T extends { endpoint_id: string }>(candidates: T[], r: ClaimRequest): T[] {
  const counts = new Map(r.inFlight);
  const chosen: T[] = [];
  for (const candidate of candidates) {
    if (chosen.length === r.limit) break;
    const n = counts.get(candidate.endpoint_id) ?? 0;
    if (n >= r.endpointLimit) continue;
    counts.set(candidate.endpoint_id, n + 1);
    chosen.push(candidate);
  }
  return chosen;
}

export function toSendable(r: SendableRow): SendableDelivery {
  return {
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
  };
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

const OUTCOME_COLUMNS = [
  ['delivery_id', 'text'],
  ['lease_token', 'text'],
  ['state', 'text'],
  ['attempt', 'int'],
  ['retry_index', 'int'],
  ['next_attempt_at', 'timestamptz'],
  ['started_at', 'timestamptz'],
  ['duration_ms', 'int'],
  ['status_code', 'int'],
  ['error_kind', 'text'],
  ['error_detail', 'text'],
  ['response_excerpt', 'text'],
] as const;

type OutcomeRow = Record<(typeof OUTCOME_COLUMNS)[number][0], string | number | null>;

function outcomeRow(o: Outcome): OutcomeRow {
  const { result } = o;
  return {
    delivery_id: o.deliveryId,
    lease_token: o.leaseToken,
    state: o.state,
    attempt: o.attempt,
    retry_index: o.retryIndex,
    next_attempt_at: toDbTime(o.nextAttemptAt),
    started_at: toDbTime(o.startedAt),
    duration_ms: result.durationMs,
    status_code: result.statusCode,
    error_kind: result.errorKind,
    error_detail: result.errorDetail,
    response_excerpt: result.responseExcerpt,
  };
}

/** The outcomes as a table: `o(delivery_id, lease_token, …)`. */
function outcomeTable(dialect: Dialect, outcomes: Outcome[]) {
  const json = JSON.stringify(outcomes.map(outcomeRow));
  if (dialect === 'postgres') {
    const columns = sql.raw(OUTCOME_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', '));
    return sql`(select * from jsonb_to_recordset(${json}::jsonb) as r(${columns}))`;
  }
  const columns = sql.raw(OUTCOME_COLUMNS.map(([name]) => `value ->> '${name}' as ${name}`).join(', '));
  return sql`(select ${columns} from json_each(${json}))`;
}

/**
 * Records a batch of attempts and moves each delivery on, where this claim still holds its lease. A
 * lease that was lost (it expired and another dispatcher took over) leaves the delivery to the other
 * claim, but the attempt still happened and is logged; a delivery gone entirely (its endpoint was
 * deleted meanwhile) logs nothing. Two statements, whatever the batch size.
 */
export async function recordOutcomes(trx: Executor, dialect: Dialect, outcomes: Outcome[], now: Date): Promise<void> {
  if (outcomes.length === 0) return;
  const o = outcomeTable(dialect, outcomes);
  await sql`
    update webhook_deliveries set state = o.state, attempt_count = o.attempt, retry_index = o.retry_index,
      next_attempt_at = o.next_attempt_at, lease_owner = null, lease_until = null,
      last_status_code = o.status_code, last_error = o.error_detail, updated_at = ${toDbTime(now)}
    from ${o} as o
    where webhook_deliveries.id = o.delivery_id and webhook_deliveries.lease_owner = o.lease_token`.execute(trx);
  await sql`
    insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error_kind, error_detail, response_excerpt)
    select o.delivery_id, o.attempt, o.started_at, o.duration_ms, o.status_code, o.error_kind, o.error_detail, o.response_excerpt
    from ${o} as o where exists (select 1 from webhook_deliveries d where d.id = o.delivery_id)`.execute(trx);
}
