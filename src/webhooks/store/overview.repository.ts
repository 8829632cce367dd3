// The webhook part of the operator overview (GET /api/admin/stats): attempts per bucket by outcome,
// attempt latency percentiles per bucket, and pending deliveries now and over time. Each is one
// grouped statement over an index of migration 0010; nothing is computed row by row in JavaScript.
import { sql } from 'kysely';
import type { Dialect, Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import { bucketIndex, type TimeWindow as Window } from '../../db/time-buckets.ts';

export interface AttemptCount {
  bucket: number;
  /** null for a success: callback-client.ts sets an error kind on every failed attempt. */
  errorKind: string | null;
  count: number;
}

/** Attempts started in [since, until), per bucket and error kind. */
export async function attemptCounts(
  db: Executor,
  dialect: Dialect,
  window: Window,
  widthSeconds: number,
): Promise<AttemptCount[]> {
  const bucket = bucketIndex(dialect, 'started_at', widthSeconds);
  const rows = await db
    .selectFrom('webhook_attempts')
    .select((eb) => [bucket.as('bucket'), 'error_kind', eb.fn.countAll<number | string>().as('n')])
    .where('started_at', '>=', toDbTime(window.since))
    .where('started_at', '<', toDbTime(window.until))
    .groupBy([bucket, 'error_kind'])
    .execute();
  return rows.map((r) => ({ bucket: Number(r.bucket), errorKind: r.error_kind, count: Number(r.n) }));
}

interface LatencyPercentiles {
  bucket: number;
  count: number;
  p50: number;
  p99: number;
}

/**
 * p50 and p99 of attempt durations per bucket, by the nearest-rank method: the smallest duration with at
 * least p % of the bucket's attempts at or below it, ceil(p·n/100)-th in order. It is exact and always a
 * duration that was observed, and both databases compute it alike: a running count over the bucket's
 * durations in order, with integer arithmetic for the rank (PostgreSQL's percentile_cont interpolates, and
 * SQLite has none).
 */
export async function latencyPercentiles(
  db: Executor,
  dialect: Dialect,
  window: Window,
  widthSeconds: number,
): Promise<LatencyPercentiles[]> {
  const bucket = bucketIndex(dialect, 'started_at', widthSeconds);
  // Durations are whole milliseconds and repeat: grouping (bucket, duration) first leaves the window
  // functions far fewer rows than the attempts; the running count then finds each rank's duration.
  const { rows } = await sql<{ bucket: number | string; n: number | string; p50: number; p99: number }>`
    with durations as (
      select ${bucket} as b, duration_ms as d, count(*) as c from webhook_attempts
      where started_at >= ${toDbTime(window.since)} and started_at < ${toDbTime(window.until)}
      group by 1, 2
    ), running as (
      select b, d,
             sum(c) over (partition by b order by d rows between unbounded preceding and current row) as below,
             cast(sum(c) over (partition by b) as bigint) as n -- integer: the ranks below divide exactly
      from durations
    )
    select b as bucket, n,
           min(case when below >= (n + 1) / 2 then d end) as p50,
           min(case when below >= (99 * n + 99) / 100 then d end) as p99
    from running
    group by b, n`.execute(db);
  return rows.map((r) => ({ bucket: Number(r.bucket), count: Number(r.n), p50: Number(r.p50), p99: Number(r.p99) }));
}

interface PendingNow {
  count: number;
  oldestCreatedAt: Date | undefined;
}

/** Deliveries pending now (webhook_deliveries_due_idx finds them) and the oldest one's creation. */
export async function pendingNow(db: Executor): Promise<PendingNow> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.min('created_at').as('oldest')])
    .where('state', '=', 'pending')
    .executeTakeFirstOrThrow();
  return { count: Number(row.n), oldestCreatedAt: row.oldest ? fromDbTime(row.oldest) : undefined };
}

interface PendingFlow {
  /** Deliveries pending at `since`: created before it, and still pending or settled at or after it. */
  atSince: number;
  /** Per bucket: deliveries created in it (within the window). */
  created: Map<number, number>;
  /** Per bucket: deliveries settled (succeeded or failed) in it (within the window). */
  settled: Map<number, number>;
}

/**
 * What the pending series is derived from, with stored times only: a delivery is pending at t when
 * created_at < t and it is still pending or its state changed (updated_at) at or after t. A settled
 * delivery's updated_at is when it settled; one put back to pending (redeliver, recover) counts as
 * pending since its creation, the only history the table keeps.
 */
export async function pendingFlow(
  db: Executor,
  dialect: Dialect,
  window: Window,
  widthSeconds: number,
): Promise<PendingFlow> {
  const [since, until] = [toDbTime(window.since), toDbTime(window.until)];
  const stillPending = db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('state', '=', 'pending')
    .where('created_at', '<', since);
  const createdAt = bucketIndex(dialect, 'created_at', widthSeconds);
  const created = db
    .selectFrom('webhook_deliveries')
    .select((eb) => [createdAt.as('bucket'), eb.fn.countAll<number | string>().as('n')])
    .where('created_at', '>=', since)
    .where('created_at', '<', until)
    .groupBy(createdAt);
  // One range scan of webhook_deliveries_settled_idx (state, updated_at, created_at) for both the deliveries
  // settled in each bucket and those created before `since` but settled after it (pending at `since`).
  const settledAt = bucketIndex(dialect, 'updated_at', widthSeconds);
  const settled = db
    .selectFrom('webhook_deliveries')
    .select((eb) => [
      settledAt.as('bucket'),
      eb.fn.countAll<number | string>().as('n'),
      eb.fn.sum<number | string | null>(sql`case when created_at < ${since} then 1 else 0 end`).as('before'),
    ])
    .where('state', 'in', ['succeeded', 'failed'])
    .where('updated_at', '>=', since)
    .groupBy(settledAt);
  const [a, c, d] = await Promise.all([stillPending.executeTakeFirstOrThrow(), created.execute(), settled.execute()]);
  const byBucket = (rows: { bucket: unknown; n: number | string }[]) =>
    new Map(rows.map((r) => [Number(r.bucket), Number(r.n)]));
  const settledLater = d.reduce((sum, r) => sum + Number(r.before ?? 0), 0);
  // Buckets at or after `until` are read for settledLater only; the axis never reaches them.
  return { atSince: Number(a.n) + settledLater, created: byBucket(c), settled: byBucket(d) };
}
