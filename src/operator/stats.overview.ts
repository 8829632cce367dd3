// The operator overview (GET /api/admin/stats): each feature's grouped counts over the window, laid
// on regular time axes with every empty bucket present, as the console's charts need.
import type { Db, Dialect } from '../db/database.ts';
import { bucketAxis, bucketStart } from '../db/time-buckets.ts';
import { signInCounts } from '../audit/signin-stats.ts';
import { COUNTED_GRANT_TYPES, tokenCounts } from '../auth-server/tokens/token-stats.ts';
import {
  attemptCounts,
  latencyPercentiles,
  pendingFlow,
  pendingNow,
  type Window,
} from '../webhooks/store/overview.repository.ts';

export const BUCKET_SECONDS = { Attempts: 60, Latency: 900, Pending: 900, Tokens: 3600, SignIns: 3600 } as const;

interface Source {
  db: Db;
  dialect: Dialect;
}

/** One entry per bucket of the axis, `fill(index, start)` giving its fields. */
function series<T>(window: Window, width: number, fill: (index: number, at: Date) => T): ({ At: string } & T)[] {
  return bucketAxis(window.since, window.until, width).map((index) => {
    const at = bucketStart(index, width);
    return { At: at.toISOString(), ...fill(index, at) };
  });
}

async function attempts({ db, dialect }: Source, window: Window) {
  const width = BUCKET_SECONDS.Attempts;
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
    items: series(window, width, (i) => buckets.get(i) ?? { Succeeded: 0, Failed: 0, FailedByKind: {} }),
    successRate: total === 0 ? null : succeeded / total,
  };
}

async function latency({ db, dialect }: Source, window: Window) {
  const width = BUCKET_SECONDS.Latency;
  const rows = new Map((await latencyPercentiles(db, dialect, window, width)).map((r) => [r.bucket, r]));
  return series(window, width, (i) => {
    const row = rows.get(i);
    return { Count: row?.count ?? 0, P50Ms: row?.p50 ?? null, P99Ms: row?.p99 ?? null };
  });
}

/** pending(end of bucket) = pending at `since` + created − settled from `since` to the end of the bucket. */
async function pending({ db, dialect }: Source, window: Window, now: Date) {
  const width = BUCKET_SECONDS.Pending;
  const [current, flow] = await Promise.all([pendingNow(db), pendingFlow(db, dialect, window, width)]);
  let count = flow.atSince;
  const points = series(window, width, (i) => {
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

async function tokens({ db }: Source, window: Window) {
  const width = BUCKET_SECONDS.Tokens;
  const byHour = new Map<number, Record<string, number>>();
  for (const row of await tokenCounts(db, window.since, window.until)) {
    const index = row.hour.getTime() / (width * 1000);
    const counts = byHour.get(index) ?? {};
    counts[row.grantType] = (counts[row.grantType] ?? 0) + row.count;
    byHour.set(index, counts);
  }
  return series(window, width, (i) => {
    const ByGrant: Record<string, number> = Object.fromEntries([...COUNTED_GRANT_TYPES, 'other'].map((g) => [g, 0]));
    for (const [grant, count] of Object.entries(byHour.get(i) ?? {})) ByGrant[grant] = (ByGrant[grant] ?? 0) + count;
    return { Total: Object.values(ByGrant).reduce((a, b) => a + b, 0), ByGrant };
  });
}

async function signIns({ db, dialect }: Source, window: Window) {
  const width = BUCKET_SECONDS.SignIns;
  const buckets = new Map<number, { Succeeded: number; Failed: number }>();
  for (const row of await signInCounts(db, dialect, window, width)) {
    const bucket = buckets.get(row.bucket) ?? { Succeeded: 0, Failed: 0 };
    bucket[row.outcome === 'succeeded' ? 'Succeeded' : 'Failed'] += row.count;
    buckets.set(row.bucket, bucket);
  }
  return series(window, width, (i) => buckets.get(i) ?? { Succeeded: 0, Failed: 0 });
}

/** The whole overview over [since, until); `now` dates the pending deliveries' age. */
export async function overview(source: Source, window: Window, now: Date) {
  const [a, l, p, t, s] = await Promise.all([
    attempts(source, window),
    latency(source, window),
    pending(source, window, now),
    tokens(source, window),
    signIns(source, window),
  ]);
  return {
    SinceUtc: window.since.toISOString(),
    UntilUtc: window.until.toISOString(),
    BucketSeconds: { ...BUCKET_SECONDS },
    Webhooks: { Attempts: a.items, SuccessRate: a.successRate, Latency: l, Pending: p },
    Tokens: t,
    SignIns: s,
  };
}
