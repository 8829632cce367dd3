// Tokens issued per UTC hour and grant type, for the operator overview (GET /api/admin/stats). The token
// endpoint must not wait for a write of ours: each success is counted in memory and the counts are added
// to token_stats (migration 0010) every FLUSH_INTERVAL_MS and when the app closes. A crash loses at most
// the counts of the last interval; a failed write keeps them for the next flush. Several instances add
// to the same rows (an upsert that sums), so the table holds the whole deployment's counts.
import type { Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import { bucketSeries, type TimeWindow } from '../../db/time-buckets.ts';

export const FLUSH_INTERVAL_MS = 5000;
const HOUR_MS = 3_600_000;

/** The grant types oidc-provider can issue tokens for here (as in the metrics); anything else is `other`. */
const COUNTED_GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:openid:params:grant-type:ciba',
] as const;
const KNOWN = new Set<string>(COUNTED_GRANT_TYPES);

function grantLabel(grantType: unknown): string {
  return typeof grantType === 'string' && KNOWN.has(grantType) ? grantType : 'other';
}

export class TokenCounter {
  /** `hour start (ms) grant type` → tokens issued since the last flush. */
  #counts = new Map<string, number>();
  #flushing: Promise<void> = Promise.resolve();
  readonly #db: Executor;
  readonly #timer: NodeJS.Timeout;

  constructor(db: Executor, onFlushError: (err: unknown) => void, intervalMs = FLUSH_INTERVAL_MS) {
    this.#db = db;
    this.#timer = setInterval(() => this.flush().catch(onFlushError), intervalMs);
    this.#timer.unref();
  }

  /** One token endpoint success: no I/O, the token response does not wait. */
  record(grantType: unknown, at = new Date()): void {
    const key = `${Math.floor(at.getTime() / HOUR_MS) * HOUR_MS} ${grantLabel(grantType)}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** Adds the counts so far to the table; one flush at a time, so none is written twice. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.catch(() => undefined).then(() => this.#write());
    return this.#flushing;
  }

  /** Stops the timer and writes what is left (the app's onClose, before the database closes). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }

  async #write(): Promise<void> {
    if (this.#counts.size === 0) return;
    const counts = this.#counts;
    this.#counts = new Map();
    const rows = [...counts].map(([key, count]) => {
      const [hour = '0', grantType = 'other'] = key.split(' ');
      return { hour: toDbTime(new Date(Number(hour))), grant_type: grantType, count };
    });
    try {
      await this.#db
        .insertInto('token_stats')
        .values(rows)
        .onConflict((oc) =>
          oc
            .columns(['hour', 'grant_type'])
            .doUpdateSet((eb) => ({ count: eb('token_stats.count', '+', eb.ref('excluded.count')) })),
        )
        .execute();
    } catch (err) {
      for (const [key, count] of counts) this.#counts.set(key, (this.#counts.get(key) ?? 0) + count);
      throw err;
    }
  }
}

interface TokenCount {
  hour: Date;
  grantType: string;
  count: number;
}

/** The stored counts of the hours that overlap [since, until). */
async function tokenCounts(db: Executor, since: Date, until: Date): Promise<TokenCount[]> {
  const firstHour = new Date(Math.floor(since.getTime() / HOUR_MS) * HOUR_MS);
  const rows = await db
    .selectFrom('token_stats')
    .select(['hour', 'grant_type', 'count'])
    .where('hour', '>=', toDbTime(firstHour))
    .where('hour', '<', toDbTime(until))
    .execute();
  return rows.map((r) => ({ hour: fromDbTime(r.hour), grantType: r.grant_type, count: Number(r.count) }));
}

/** The overview's series (GET /api/admin/stats): tokens per hour bucket of the window, by grant type. */
export const TOKEN_BUCKET_SECONDS = HOUR_MS / 1000;

export async function tokenSeries(db: Executor, window: TimeWindow) {
  const width = TOKEN_BUCKET_SECONDS;
  const byHour = new Map<number, Record<string, number>>();
  for (const row of await tokenCounts(db, window.since, window.until)) {
    const index = row.hour.getTime() / (width * 1000);
    const counts = byHour.get(index) ?? {};
    counts[row.grantType] = (counts[row.grantType] ?? 0) + row.count;
    byHour.set(index, counts);
  }
  return bucketSeries(window, width, (i) => {
    const ByGrant: Record<string, number> = Object.fromEntries([...COUNTED_GRANT_TYPES, 'other'].map((g) => [g, 0]));
    for (const [grant, count] of Object.entries(byHour.get(i) ?? {})) ByGrant[grant] = (ByGrant[grant] ?? 0) + count;
    return { Total: Object.values(ByGrant).reduce((a, b) => a + b, 0), ByGrant };
  });
}
