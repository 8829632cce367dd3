// The webhook part of the operator overview (GET /api/admin/stats, composed in src/operator/stats.overview.ts):
// attempts by outcome, latency percentiles and pending deliveries, laid on regular time axes with every empty
// bucket present, as the console's charts need. The grouped statements are in ../store/overview.repository.ts.
import type { Db, Dialect } from '../../db/executor.ts';
import { bucketSeries, type TimeWindow } from '../../db/time-buckets.ts';
import { attemptCounts, latencyPercentiles, pendingFlow, pendingNow } from '../store/overview.repository.ts';

/** Bucket widths of the webhook series, in seconds. */
export const WEBHOOK_BUCKET_SECONDS = { Attempts: 60, Latency: 900, Pending: 900 } as const;

interface Source {
  db: Db;
  dialect: Dialect;
}

async function attempts({ db, dialect }: Source, window: TimeWindow) {
  const width = WEBHOOK_BUCKET_SECONDS.Attempts;
  const buckets = new Map<number, { Succeeded: number; Failed: number; FailedByKind: Record<string, number> }>();
  let succeeded = 0;
  let total = 0;
  for (const row of await attemptCounts(db, dialect, window, width)) {
    const bucket = buckets.get(row.bucket) ?? { Succeeded: 0, Failed: 0, FailedByKind: {} };
    buckets.set(row.bucket, bucket);
    total += row.count;
    if (row.errorKind === null) {
      bucket.Succeeded += row.count;
      succeeded += row.count;
    } else {
      bucket.Failed += row.count;
      bucket.FailedByKind[row.errorKind] = row.count;
    }
  }
  return {
    items: bucketSeries(window, width, (i) => buckets.get(i) ?? { Succeeded: 0, Failed: 0, FailedByKind: {} }),
    successRate: total === 0 ? null : succeeded / total,
  };
}

async function latency({ db, dialect }: Source, window: TimeWindow) {
  const width = WEBHOOK_BUCKET_SECONDS.Latency;
  const rows = new Map((await latencyPercentiles(db, dialect, window, width)).map((r) => [r.bucket, r]));
  return bucketSeries(window, width, (i) => {
    const row = rows.get(i);
    return { Count: row?.count ?? 0, P50Ms: row?.p50 ?? null, P99Ms: row?.p99 ?? null };
  });
}

/** pending(end of bucket) = pending at `since` + created − settled from `since` to the end of the bucket. */
async function pending({ db, dialect }: Source, window: TimeWindow, now: Date) {
  const width = WEBHOOK_BUCKET_SECONDS.Pending;
  const [current, flow] = await Promise.all([pendingNow(db), pendingFlow(db, dialect, window, width)]);
  let count = flow.atSince;
  const points = bucketSeries(window, width, (i) => {
    count += (flow.created.get(i) ?? 0) - (flow.settled.get(i) ?? 0);
    return { Count: count };
  });
  const oldest = current.oldestCreatedAt;
  return {
    Count: current.count,
    OldestAgeSeconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : null,
    Series: points,
  };
}

/** Every client's webhook traffic over [since, until); `now` dates the pending deliveries' age. */
export async function webhookOverview(source: Source, window: TimeWindow, now: Date) {
  const [a, l, p] = await Promise.all([
    attempts(source, window),
    latency(source, window),
    pending(source, window, now),
  ]);
  return { Attempts: a.items, SuccessRate: a.successRate, Latency: l, Pending: p };
}
