// Sign-ins per time bucket for the operator overview (GET /api/admin/stats), read from the audit trail's
// signin.succeeded and signin.failed entries (src/auth-server/provider/audit-events.ts writes them) through the
// audit_log_action_time index of migration 0010.
import type { Dialect, Executor } from '../db/database.ts';
import { toDbTime } from '../db/codecs.ts';
import { bucketIndex } from '../db/time-buckets.ts';

export interface SignInCount {
  bucket: number;
  outcome: 'succeeded' | 'failed';
  count: number;
}

export async function signInCounts(
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
