// Retention of the audit trail (AUDIT_RETENTION, docs/security.md, "The audit trail"): entries older than the
// retention period are deleted in small batches, so a purge after a long outage (or the first one on a
// large table) never holds a long lock nor runs into the statement timeout. Several instances may purge
// at once: a batch deletes what is still there, and deleting a row twice is a no-op.
import type { Executor } from '../db/executor.ts';
import { fromDbTime, toDbTime } from '../db/codecs.ts';

const AUDIT_PURGE_BATCH = 1000;
const AUDIT_PURGE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Deletes every entry older than `before`, `batchSize` rows per statement, oldest first; the number
 * deleted. The batch is read in audit_log_occurred_at order, so each statement reads only the rows it
 * deletes (in seq order the last batch would walk every entry kept), and from where the last one ended:
 * on PostgreSQL deleted rows stay in the index until VACUUM. Between batches the purge yields to the
 * event loop (SQLite runs a statement on it, holding the single write lock), so writers wait for one
 * batch at most.
 */
export async function purgeAuditBefore(db: Executor, before: Date, batchSize = AUDIT_PURGE_BATCH): Promise<number> {
  let total = 0;
  let mark: string | Date | undefined;
  for (;;) {
    let batch = db
      .selectFrom('audit_log')
      .select('seq')
      .where('occurred_at', '<', toDbTime(before))
      .orderBy('occurred_at')
      .limit(batchSize);
    if (mark !== undefined) batch = batch.where('occurred_at', '>=', mark);
    const deleted = await db.deleteFrom('audit_log').where('seq', 'in', batch).returning('occurred_at').execute();
    total += deleted.length;
    if (deleted.length < batchSize) return total;
    mark = deleted.map((row) => row.occurred_at).reduce((a, b) => (fromDbTime(a) >= fromDbTime(b) ? a : b));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

interface AuditRetention {
  /** Stops the timers and waits for a purge in flight, so the database can be closed after it. */
  stop(): Promise<void>;
}

/**
 * Purges once soon after start (an instance that was down catches up) and then every
 * AUDIT_PURGE_INTERVAL_MS; a failure is reported and the next round tries again.
 */
export function startAuditRetention(
  db: Executor,
  retentionMs: number,
  onError: (err: unknown) => void,
  now: () => Date = () => new Date(),
): AuditRetention {
  let running: Promise<void> | undefined;
  const purge = (): void => {
    if (running) return; // a slow purge is not stacked on itself
    running = purgeAuditBefore(db, new Date(now().getTime() - retentionMs))
      .then(() => undefined, onError)
      .finally(() => {
        running = undefined;
      });
  };
  const first = setTimeout(purge, 0).unref();
  const every = setInterval(purge, AUDIT_PURGE_INTERVAL_MS).unref();
  return {
    async stop() {
      clearTimeout(first);
      clearInterval(every);
      await running;
    },
  };
}
