// Brute-force protection for the login page, kept in the database so every instance sees the same
// counts. Failures are counted per account and per client address; past the threshold each attempt
// must wait a delay that doubles (1 s, 2 s, 4 s … at most 15 min) and gets 429. The real user is never
// locked out for good: the delay is bounded, and counts older than the window are forgotten.
import { sql, type Kysely } from 'kysely';
import { toDbTime } from '../../db/codecs.ts';
import type { Database } from '../../db/schema.ts';

const MAX_DELAY_MS = 15 * 60 * 1000;
const FORGET_AFTER_MS = 15 * 60 * 1000;
/** A shared address (NAT, office) sees several users' typos: a looser threshold than one account's. */
const ADDRESS_FACTOR = 4;

interface ThrottleSettings {
  maxFailures: number;
}

export function throttleKeys(email: string, address: string): { account: string; address: string } {
  return { account: `account:${email.trim().toLowerCase()}`, address: `address:${address}` };
}

/** Milliseconds the caller must still wait, 0 when an attempt is allowed now. */
export async function loginWaitMs(
  db: Kysely<Database>,
  keys: { account: string; address: string },
  now = new Date(),
): Promise<number> {
  const rows = await db
    .selectFrom('login_throttle')
    .select(['blocked_until'])
    .where('key', 'in', [keys.account, keys.address])
    .execute();
  const until = Math.max(0, ...rows.map((r) => new Date(r.blocked_until).getTime()));
  return Math.max(0, until - now.getTime());
}

export async function recordLoginFailure(
  db: Kysely<Database>,
  keys: { account: string; address: string },
  settings: ThrottleSettings,
  now = new Date(),
): Promise<void> {
  await bump(db, keys.account, settings.maxFailures, now);
  await bump(db, keys.address, settings.maxFailures * ADDRESS_FACTOR, now);
}

/** A successful login clears its account's count; the address count decays on its own. */
export async function recordLoginSuccess(db: Kysely<Database>, keys: { account: string }): Promise<void> {
  await db.deleteFrom('login_throttle').where('key', '=', keys.account).execute();
}

export async function purgeStaleThrottles(db: Kysely<Database>, now = new Date()): Promise<void> {
  await db
    .deleteFrom('login_throttle')
    .where('updated_at', '<', toDbTime(new Date(now.getTime() - MAX_DELAY_MS - FORGET_AFTER_MS)))
    .execute();
}

/** An atomic increment (concurrent failures all count), then the delay that count earns. */
async function bump(db: Kysely<Database>, key: string, threshold: number, now: Date): Promise<void> {
  const stale = toDbTime(new Date(now.getTime() - FORGET_AFTER_MS));
  const row = await db
    .insertInto('login_throttle')
    .values({ key, failures: 1, blocked_until: toDbTime(now), updated_at: toDbTime(now) })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        failures: sql<number>`case when login_throttle.updated_at < ${stale} then 1 else login_throttle.failures + 1 end`,
        updated_at: toDbTime(now),
      }),
    )
    .returning('failures')
    .executeTakeFirstOrThrow();
  if (row.failures < threshold) return;
  const delay = Math.min(MAX_DELAY_MS, 1000 * 2 ** Math.min(30, row.failures - threshold));
  await db
    .updateTable('login_throttle')
    .set({ blocked_until: toDbTime(new Date(now.getTime() + delay)) })
    .where('key', '=', key)
    .execute();
}
