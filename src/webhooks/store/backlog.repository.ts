// The delivery backlog for the metrics (docs/reference/metrics.md), read at each scrape. One statement over the
// pending rows, which webhook_deliveries_due_idx (state, next_attempt_at) finds without a table scan
// of the delivered history. On PostgreSQL every instance shares the table, so every instance reports
// the same numbers: aggregate them with max(), not sum().
import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';

export interface DeliveryBacklog {
  pending: number;
  /** Seconds since the oldest due delivery became due; 0 when none is due. */
  oldestDueAgeSeconds: number;
  /** Pending deliveries under a live lease: being sent by a dispatcher right now. */
  inFlight: number;
}

export async function deliveryBacklog(db: Executor, now: Date): Promise<DeliveryBacklog> {
  const at = toDbTime(now);
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('pending'),
      eb.fn
        .min(sql<string | Date | null>`case when next_attempt_at <= ${at} then next_attempt_at end`)
        .as('oldest_due'),
      eb.fn.sum<number | string | null>(sql`case when lease_until > ${at} then 1 else 0 end`).as('in_flight'),
    ])
    .where('state', '=', 'pending')
    .executeTakeFirstOrThrow();
  const oldestDue = row.oldest_due ? fromDbTime(row.oldest_due) : undefined;
  return {
    pending: Number(row.pending),
    oldestDueAgeSeconds: oldestDue ? Math.max(0, (now.getTime() - oldestDue.getTime()) / 1000) : 0,
    inFlight: Number(row.in_flight ?? 0),
  };
}
