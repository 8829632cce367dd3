// Sign-ins per time bucket for the operator overview (GET /api/admin/stats), read from the audit trail's
// signin.succeeded and signin.failed entries (src/auth-server/provider/audit-events.ts writes them) through the
// audit_log_action_time index of migration 0010.
import type { Dialect, Executor } from '../db/executor.ts';
import { toDbTime } from '../db/codecs.ts';
import { bucketIndex, bucketSeries, type TimeWindow } from '../db/time-buckets.ts';

interface SignInCount {
  bucket: number;
  outcome: 'succeeded' | 'failed';
  count: number;
}

async function signInCounts(
  db: Executor,
  dialect: Dialect,
  window: { since: Date; until: Date },
  widthSeconds: number,
): Promise<SignInCount[]> {
  const bucket = bucketIndex(dialect, 'occurred_at', widthSeconds);
  const rows = await db
    .selectFrom('audit_log')
    .select((eb) => [bucket.as('bucket'), 'action', eb.fn.countAll<number | string>().as('n')])
    .where('action', 'in', ['signin.succeeded', 'signin.failed'])
    .where('occurred_at', '>=', toDbTime(window.since))
    .where('occurred_at', '<', toDbTime(window.until))
    .groupBy([bucket, 'action'])
    .execute();
  return rows.map((r) => ({
    bucket: Number(r.bucket),
    outcome: r.action === 'signin.succeeded' ? 'succeeded' : 'failed',
    count: Number(r.n),
  }));
}

/** The overview's series (GET /api/admin/stats): sign-ins per hour bucket of the window, by outcome. */
export const SIGNIN_BUCKET_SECONDS = 3600;

export async function signInSeries(db: Executor, dialect: Dialect, window: TimeWindow) {
  const width = SIGNIN_BUCKET_SECONDS;
  const buckets = new Map<number, { Succeeded: number; Failed: number }>();
  for (const row of await signInCounts(db, dialect, window, width)) {
    const bucket = buckets.get(row.bucket) ?? { Succeeded: 0, Failed: 0 };
    bucket[row.outcome === 'succeeded' ? 'Succeeded' : 'Failed'] += row.count;
    buckets.set(row.bucket, bucket);
  }
  return bucketSeries(window, width, (i) => buckets.get(i) ?? { Succeeded: 0, Failed: 0 });
}
