// Bulk data for the scale benchmark (bench/scale/scale.ts): orders, webhook events and their deliveries written
// by the database itself from a row-number series (SQLite: a recursive CTE; PostgreSQL: generate_series),
// one INSERT … SELECT per table and chunk, so millions of rows load in minutes instead of the hours the API
// would take. Row n is the same on both dialects: the shape, not randomness, is what the benchmark needs.
//
// Shape: orders spread over 50,000 customers and the five states; one order.* event per order (customer
// and order set, so the end-user feed has something to filter); four deliveries per event to four of
// ENDPOINTS (disabled, so new orders fan out to none of them), 97 % succeeded, 2 % failed, 1 % pending
// with a retry due an hour after the run (the dispatcher never sends them). All of it inside
// EVENT_RETENTION: the purge has nothing to delete until the benchmark adds an expired backlog.
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { SecretBox } from '../../src/webhooks/store/secrets.ts';
import { BENCH_WEBHOOK_SECRET_KEY } from '../lib/databases.ts';

export interface ScaleCounts {
  orders: number;
  events: number;
  /** Deliveries per event (four of the ENDPOINTS each). */
  deliveriesPerEvent: number;
}

export const ENDPOINTS = 100;
/**
 * Orders (and events) per customer, the same in every database size: an end user's feed page then holds
 * as many of their events on the small database as on the large one (50 and 50,000 customers), and the
 * ratio measures the table's size, not a fuller page.
 */
export const ORDERS_PER_CUSTOMER = 20;
const customersOf = (counts: ScaleCounts): number => Math.max(1, Math.floor(counts.orders / ORDERS_PER_CUSTOMER));
const CHUNK = 250_000;
const DAY_MS = 86_400_000;

/** The bulk loader of one dialect: `series(sql, from, to)` runs `sql` (an INSERT … SELECT … FROM s) over s(n), n in [from, to]. */
interface Loader {
  series(sql: (n: string) => string, from: number, to: number): Promise<void>;
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

export const endpointId = (n: number): string => `whep_${n.toString(16).padStart(32, '0')}`;
/** Customer k's id: a UUID whose last group is k, as lower-case text (what the API stores). */
export const customerId = (k: number): string => `00000000-0000-4000-8000-${k.toString(16).padStart(12, '0')}`;

/** Over `spanMs` ending an hour ago: old enough to be history, young enough for retention. */
function timeline(count: number): { startMs: number; stepMs: number } {
  const spanMs = 20 * DAY_MS;
  return { startMs: Date.now() - spanMs - 3_600_000, stepMs: Math.max(1, Math.floor(spanMs / Math.max(1, count))) };
}

function sqliteLoader(path: string): Loader {
  const db = new DatabaseSync(path);
  // A big page cache and no fsync while loading: a failed load is simply run again.
  db.exec('PRAGMA synchronous = OFF; PRAGMA cache_size = -1048576; PRAGMA foreign_keys = OFF');
  return {
    async series(sql, from, to) {
      db.exec('BEGIN');
      db.prepare(
        `WITH RECURSIVE s(n) AS (SELECT ${from} UNION ALL SELECT n + 1 FROM s WHERE n < ${to}) ${sql('n')}`,
      ).run();
      db.exec('COMMIT');
    },
    async exec(sql) {
      db.exec(sql);
    },
    async close() {
      db.close();
    },
  };
}

async function postgresLoader(url: string): Promise<Loader> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('SET synchronous_commit = off');
  return {
    async series(sql, from, to) {
      await client.query(`WITH s(n) AS (SELECT generate_series(${from}, ${to})) ${sql('n')}`);
    },
    async exec(sql) {
      await client.query(sql);
    },
    async close() {
      await client.end();
    },
  };
}

/** SQL fragments that differ between the dialects. */
function dialectSql(dialect: 'sqlite' | 'postgres') {
  const sqlite = dialect === 'sqlite';
  return {
    hex32: (x: string) => (sqlite ? `printf('%032x', ${x})` : `lpad(to_hex(${x}), 32, '0')`),
    hex12: (x: string) => (sqlite ? `printf('%012x', ${x})` : `lpad(to_hex(${x}), 12, '0')`),
    /** ISO-8601 UTC with milliseconds, as toDbTime writes it (SQLite text; PostgreSQL timestamptz). */
    time: (ms: string) =>
      sqlite ? `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')` : `to_timestamp((${ms}) / 1000.0)`,
    uuid: (x: string) => (sqlite ? x : `(${x})::uuid`),
  };
}

/** Seeds the endpoints, `counts.orders` orders, `counts.events` events and their deliveries. */
export async function seedScale(
  dialect: 'sqlite' | 'postgres',
  url: string,
  counts: ScaleCounts,
  progress: (step: string) => void = () => undefined,
): Promise<void> {
  const loader = dialect === 'sqlite' ? sqliteLoader(url.slice('sqlite:'.length)) : await postgresLoader(url);
  const d = dialectSql(dialect);
  try {
    const { startMs, stepMs } = timeline(counts.orders);
    const at = (n: string) => d.time(`${startMs} + ${n} * ${stepMs}`);
    await loader.series(
      (n) => `INSERT INTO webhook_endpoints (id, owner, url, description, event_types, enabled, disabled_reason, secret,
        previous_secret, previous_secret_expires_at, failing_since, created_at, updated_at)
        SELECT 'whep_' || ${d.hex32(n)}, 'bench-client', 'https://hooks.example.com/' || ${n}, 'scale', '["*"]', 0,
          'manual', 'sealed', NULL, NULL, NULL, ${d.time(String(startMs))}, ${d.time(String(startMs))} FROM s`,
      0,
      ENDPOINTS - 1,
    );
    // Secrets sealed with the key the servers run with: Signet checks one at start (secrets.ts).
    const box = new SecretBox(Buffer.from(BENCH_WEBHOOK_SECRET_KEY, 'base64url'));
    for (let i = 0; i < ENDPOINTS; i++)
      await loader.exec(
        `UPDATE webhook_endpoints SET secret = '${box.seal(endpointId(i), `whsec_${'A'.repeat(43)}=`)}' WHERE id = '${endpointId(i)}'`,
      );
    const customers = customersOf(counts);
    const customer = (n: string) => d.uuid(`'00000000-0000-4000-8000-' || ${d.hex12(`${n} % ${customers}`)}`);
    const statuses = `CASE ${'n'} % 5 WHEN 0 THEN 'pending' WHEN 1 THEN 'paid' WHEN 2 THEN 'cancelled' WHEN 3 THEN 'shipped' ELSE 'delivered' END`;
    for (let from = 1; from <= counts.orders; from += CHUNK) {
      const to = Math.min(counts.orders, from + CHUNK - 1);
      await loader.series(
        (n) => `INSERT INTO orders (id, customer_id, total_minor, currency, status, version, created_at, updated_at)
          ${dialect === 'postgres' ? 'OVERRIDING SYSTEM VALUE ' : ''}SELECT ${n}, ${customer(n)}, 1999, 'USD', ${statuses}, 1, ${at(n)}, ${at(n)} FROM s`,
        from,
        to,
      );
      progress(`orders ${to}`);
    }
    if (dialect === 'postgres') {
      // The explicit ids above bypassed the identity: start it after them.
      await loader.exec(`SELECT setval(pg_get_serial_sequence('orders', 'id'), ${Math.max(1, counts.orders)})`);
    }
    const types = `CASE n % 4 WHEN 0 THEN 'order.created' WHEN 1 THEN 'order.paid' WHEN 2 THEN 'order.shipped' ELSE 'order.cancelled' END`;
    for (let from = 1; from <= counts.events; from += CHUNK) {
      const to = Math.min(counts.events, from + CHUNK - 1);
      await loader.series(
        (n) => `INSERT INTO webhook_events (seq, id, type, occurred_at, data, owner, customer_id, order_id)
          SELECT ${n}, 'evt_' || ${d.hex32(n)}, ${types}, ${at(n)}, '{"Id":' || ${n} || ',"Status":"pending"}', NULL,
            '00000000-0000-4000-8000-' || ${d.hex12(`${n} % ${customers}`)}, ${n} FROM s`,
        from,
        to,
      );
      progress(`events ${to}`);
    }
    if (dialect === 'postgres')
      await loader.exec(
        `SELECT setval(pg_get_serial_sequence('webhook_events', 'seq'), ${Math.max(1, counts.events)})`,
      );
    // Delivery n belongs to event (n - 1) / k + 1, to endpoint n % ENDPOINTS: the k of one event are distinct.
    const k = counts.deliveriesPerEvent;
    const total = counts.events * k;
    const event = (n: string) => `((${n} - 1) / ${k} + 1)`;
    const state = (n: string) =>
      `CASE WHEN (${n} * 37) % 100 < 97 THEN 'succeeded' WHEN (${n} * 37) % 100 < 99 THEN 'failed' ELSE 'pending' END`;
    const future = d.time(`${Date.now() + 3_600_000} + ${'n'} % 3600000`);
    for (let from = 1; from <= total; from += CHUNK) {
      const to = Math.min(total, from + CHUNK - 1);
      await loader.series(
        (
          n,
        ) => `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, attempt_count, retry_index, next_attempt_at,
            lease_owner, lease_until, last_status_code, last_error, created_at, updated_at)
          SELECT 'dlv_' || ${d.hex32(n)}, 'evt_' || ${d.hex32(event(n))}, 'whep_' || ${d.hex32(`${n} % ${ENDPOINTS}`)},
            ${state(n)}, 1, 1, CASE WHEN ${state(n)} = 'pending' THEN ${future} ELSE ${at(event(n))} END, NULL, NULL,
            200, NULL, ${at(event(n))}, ${at(event(n))} FROM s`,
        from,
        to,
      );
      progress(`deliveries ${to}`);
    }
    // What autovacuum (PostgreSQL) does soon after a bulk load; SQLite gets no ANALYZE: Signet never runs one.
    if (dialect === 'postgres') await loader.exec('VACUUM ANALYZE');
  } finally {
    await loader.close();
  }
}

export interface Backlog {
  /** Expired events, each with `deliveriesPerEvent` settled deliveries and one attempt per delivery. */
  events: number;
  deliveriesPerEvent: number;
  /** Expired idempotency keys. */
  keys: number;
  /** Audit entries past AUDIT_RETENTION. */
  audit: number;
}

/**
 * A retention backlog older than every retention period (400 days), as after a long outage: what the
 * purges have to delete. `tag` keeps the ids of successive backlogs apart.
 */
export async function seedBacklog(dialect: 'sqlite' | 'postgres', url: string, tag: string, b: Backlog): Promise<void> {
  const loader = dialect === 'sqlite' ? sqliteLoader(url.slice('sqlite:'.length)) : await postgresLoader(url);
  const d = dialectSql(dialect);
  const base = Date.now() - 400 * DAY_MS;
  const at = (n: string) => d.time(`${base} + ${n}`);
  const id = (prefix: string, n: string) => `'${prefix}_${tag}' || ${d.hex32(n)}`;
  try {
    if (b.events > 0) {
      await loader.series(
        (n) => `INSERT INTO webhook_events (id, type, occurred_at, data, owner, customer_id, order_id)
          SELECT ${id('evt', n)}, 'order.created', ${at(n)}, '{}', NULL, NULL, NULL FROM s`,
        1,
        b.events,
      );
      const k = b.deliveriesPerEvent;
      const event = (n: string) => `((${n} - 1) / ${k} + 1)`;
      await loader.series(
        (
          n,
        ) => `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, attempt_count, retry_index, next_attempt_at,
            lease_owner, lease_until, last_status_code, last_error, created_at, updated_at)
          SELECT ${id('dlv', n)}, ${id('evt', event(n))}, 'whep_' || ${d.hex32(`${n} % ${ENDPOINTS}`)}, 'succeeded', 1, 1,
            ${at(event(n))}, NULL, NULL, 200, NULL, ${at(event(n))}, ${at(event(n))} FROM s`,
        1,
        b.events * k,
      );
      await loader.series(
        (n) => `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error_kind,
            error_detail, response_excerpt)
          SELECT ${id('dlv', n)}, 1, ${at(event(n))}, 12, 200, NULL, NULL, '{"ok":true}' FROM s`,
        1,
        b.events * k,
      );
    }
    if (b.keys > 0)
      await loader.series(
        (
          n,
        ) => `INSERT INTO idempotency_keys (caller, key, fingerprint, state, locked_until, response_status, response_headers,
            response_body, created_at, expires_at)
          SELECT 'client:bench-client', ${id('key', n)}, 'f', 'done', ${at(n)}, 201, '{}', '{"Id":1}', ${at(n)}, ${at(n)} FROM s`,
        1,
        b.keys,
      );
    if (b.audit > 0)
      await loader.series(
        (n) => `INSERT INTO audit_log (id, occurred_at, actor_type, actor_id, action, target_type, target_id, outcome,
            request_id, source_address, details)
          SELECT ${id('aud', n)}, ${at(n)}, 'user', 'u', 'client.updated', 'client', 'c', 'success', NULL, NULL, '{}' FROM s`,
        1,
        b.audit,
      );
    if (dialect === 'postgres') await loader.exec('ANALYZE');
  } finally {
    await loader.close();
  }
}
