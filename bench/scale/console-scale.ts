// The console's scale data set (docs/benchmarks-history.md, "Console at scale"): 10,000 webhook endpoints and 1,000,000
// deliveries, with their events, their attempts and an audit trail, then the API calls the console's
// list pages make, timed against a bare Fastify route in the same run.
//
//   npx node bench/scale/console-scale.ts                                         SQLite (a temporary file)
//   BENCH_DIALECT=postgres BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres \
//     npx node bench/scale/console-scale.ts                                       PostgreSQL (a temporary schema)
// Environment: BENCH_ENDPOINTS (10000), BENCH_DELIVERIES (1000000), BENCH_CALLS (20 per page), BENCH_KEEP=1
// (keep the database afterwards, to EXPLAIN its queries; BENCH_TRACE=1 logs each step on stderr).
// Prints one JSON document (machine, seeding time, median and p95 per page); the figures of record are
// in docs/benchmarks-history.md, "Console at scale".
//
// Seeding writes the tables directly, in transactions of multi-row INSERTs: the API would take hours.
// The shape is a realistic one: two deliveries per event; one hot endpoint owned by the benchmark's client
// gets a tenth of all deliveries; 97 % succeeded, 2 % failed (8 attempts), 1 % pending; 10 % of the
// successes needed a retry. Signet itself migrates the database first, and reads it afterwards.
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { encodeCursor } from '../../src/http/representation/cursor.ts';
import { SecretBox } from '../../src/webhooks/store/secrets.ts';
import { createBenchDatabase, BENCH_WEBHOOK_SECRET_KEY, type BenchDialect } from '../lib/databases.ts';
import { benchServerEnv, createBenchIssuer } from '../api/tokens.ts';

const DIALECT = (process.env.BENCH_DIALECT ?? 'sqlite') as BenchDialect;
const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 10_000);
const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 1_000_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 20);
const CLIENT = 'bench-client'; // the client of the bench issuer's tokens (bench/api/tokens.ts)
const HOT = endpointId(0);
const PAGE = 50; // the console's page size
const DAY_MS = 86_400_000;
const EVENT_TYPES = [
  ['order.created', 30],
  ['order.updated', 10],
  ['order.paid', 20],
  ['order.shipped', 15],
  ['order.delivered', 15],
  ['order.cancelled', 8],
  ['webhook.ping', 2],
] as const;

type Row = (string | number | null)[];

/** Multi-row INSERTs inside one transaction per call, on either database. */
interface Writer {
  insert(table: string, columns: string[], rows: Row[]): Promise<void>;
  transaction(work: () => Promise<void>): Promise<void>;
  finish(): Promise<void>;
}

function endpointId(i: number): string {
  return `whep_${i.toString(16).padStart(32, '0')}`;
}

function ids(prefix: string, count: number): string[] {
  const bytes = randomBytes(16 * count).toString('hex');
  return Array.from({ length: count }, (_, i) => `${prefix}${bytes.slice(i * 32, i * 32 + 32)}`);
}

function sqliteWriter(path: string): Writer {
  const db = new DatabaseSync(path);
  // A large page cache for the random-id indexes; no fsync: a failed seed is simply run again.
  db.exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-1048576');
  const statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
  return {
    async insert(table, columns, rows) {
      // SQLite allows 32,766 parameters per statement.
      const per = Math.floor(30_000 / columns.length);
      for (let i = 0; i < rows.length; i += per) {
        const chunk = rows.slice(i, i + per);
        const key = `${table}:${chunk.length}`;
        let statement = statements.get(key);
        if (!statement) {
          const tuple = `(${columns.map(() => '?').join(',')})`;
          statement = db.prepare(
            `INSERT INTO ${table} (${columns.join(',')}) VALUES ${Array(chunk.length).fill(tuple).join(',')}`,
          );
          statements.set(key, statement);
        }
        statement.run(...chunk.flat());
      }
    },
    async transaction(work) {
      db.exec('BEGIN');
      await work();
      db.exec('COMMIT');
    },
    async finish() {
      db.close();
    },
  };
}

async function postgresWriter(url: string): Promise<Writer> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    async insert(table, columns, rows) {
      // PostgreSQL allows 65,535 parameters per statement.
      const per = Math.floor(60_000 / columns.length);
      for (let i = 0; i < rows.length; i += per) {
        const chunk = rows.slice(i, i + per);
        const tuples = chunk.map((_, r) => `(${columns.map((_, c) => `$${r * columns.length + c + 1}`).join(',')})`);
        await client.query(`INSERT INTO ${table} (${columns.join(',')}) VALUES ${tuples.join(',')}`, chunk.flat());
      }
    },
    async transaction(work) {
      await client.query('BEGIN');
      await work();
      await client.query('COMMIT');
    },
    async finish() {
      await client.query('ANALYZE'); // what autovacuum does soon after a bulk load
      await client.end();
    },
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();

async function seedEndpoints(writer: Writer, start: number): Promise<void> {
  const box = new SecretBox(Buffer.from(BENCH_WEBHOOK_SECRET_KEY, 'base64url'));
  const rows: Row[] = [];
  for (let i = 0; i < ENDPOINTS; i++) {
    const id = endpointId(i);
    const owner = i < 50 ? CLIENT : `client-${String(Math.floor(i / 50)).padStart(4, '0')}`;
    const at = iso(start + i * 1000);
    const secret = box.seal(id, `whsec_${randomBytes(32).toString('base64')}`);
    const enabled = i % 97 === 0 ? 0 : 1;
    rows.push([id, owner, `https://hooks${i}.example.com/signet`, `Endpoint ${i}`, '["*"]', enabled]);
    rows[i]!.push(enabled ? null : 'failing', secret, null, null, null, at, at);
  }
  const columns = ['id', 'owner', 'url', 'description', 'event_types', 'enabled', 'disabled_reason', 'secret'];
  columns.push('previous_secret', 'previous_secret_expires_at', 'failing_since', 'created_at', 'updated_at');
  await writer.transaction(() => writer.insert('webhook_endpoints', columns, rows));
}

function eventType(n: number): string {
  let left = n % 100;
  for (const [type, share] of EVENT_TYPES) if ((left -= share) < 0) return type;
  return 'order.created';
}

/** A second endpoint for the event, never the first one again. */
function endpointFor(n: number, other?: string): string {
  const id = n % 10 === 0 ? HOT : endpointId(1 + ((n * 7919) % (ENDPOINTS - 1)));
  return id === other ? endpointId(1 + ((n * 7919 + 1) % (ENDPOINTS - 1))) : id;
}

function deliveryState(n: number): { state: string; attempts: number; status: number | null } {
  const k = (n * 2654435761) % 1000;
  if (k < 10) return { state: 'pending', attempts: 1, status: 503 };
  if (k < 30) return { state: 'failed', attempts: 8, status: 500 };
  return { state: 'succeeded', attempts: k < 127 ? 2 : 1, status: 200 };
}

/** One batch of events with two deliveries each, and their attempts. */
function batchRows(first: number, count: number, start: number, span: number) {
  const events: Row[] = [];
  const deliveries: Row[] = [];
  const attempts: Row[] = [];
  const eventIds = ids('evt_', count);
  const deliveryIds = ids('dlv_', count * 2);
  for (let i = 0; i < count; i++) {
    const n = first + i;
    const at = start + Math.floor((n / (DELIVERIES / 2)) * span);
    const type = eventType(n);
    const owner = type.startsWith('webhook.') ? CLIENT : null;
    const orderId = type.startsWith('order.') ? 1 + (n % 200_000) : null;
    const data = orderId ? `{"Id":${orderId},"Status":"pending","Total":19.99,"Currency":"USD"}` : '{}';
    events.push([eventIds[i]!, type, iso(at), data, owner, null, orderId]);
    let previous: string | undefined;
    for (let d = 0; d < 2; d++) {
      const endpoint = endpointFor(n * 2 + d, previous);
      previous = endpoint;
      const id = deliveryIds[i * 2 + d]!;
      const { state, attempts: tries, status } = deliveryState(n * 2 + d);
      const created = iso(at + 3);
      // Pending ones wait for a retry later than the run: the dispatcher must not call example.com.
      const next = state === 'pending' ? iso(Date.now() + 3_600_000 + (n % 3_600) * 1000) : created;
      const error = state === 'succeeded' ? null : `HTTP ${status}`;
      deliveries.push([
        id,
        eventIds[i]!,
        endpoint,
        state,
        tries,
        tries,
        next,
        null,
        null,
        status,
        error,
        created,
        created,
      ]);
      for (let a = 1; a <= tries; a++) {
        const code = a === tries && state === 'succeeded' ? 200 : (status ?? 500);
        attempts.push([id, a, iso(at + 3 + (a - 1) * 5000), 40 + (n % 200), code, code === 200 ? null : 'status']);
        attempts[attempts.length - 1]!.push(null, code === 200 ? '{"ok":true}' : 'Service Unavailable');
      }
    }
  }
  return { events, deliveries, attempts };
}

const EVENT_COLUMNS = ['id', 'type', 'occurred_at', 'data', 'owner', 'customer_id', 'order_id'];
const DELIVERY_COLUMNS = ['id', 'event_id', 'endpoint_id', 'state', 'attempt_count', 'retry_index'];
DELIVERY_COLUMNS.push('next_attempt_at', 'lease_owner', 'lease_until', 'last_status_code', 'last_error');
DELIVERY_COLUMNS.push('created_at', 'updated_at');
const ATTEMPT_COLUMNS = ['delivery_id', 'attempt', 'started_at', 'duration_ms', 'status_code', 'error_kind'];
ATTEMPT_COLUMNS.push('error_detail', 'response_excerpt');

async function seedDeliveries(writer: Writer, start: number, span: number): Promise<number> {
  const events = DELIVERIES / 2;
  const batch = 10_000;
  let attempts = 0;
  for (let first = 0; first < events; first += batch) {
    const rows = batchRows(first, Math.min(batch, events - first), start, span);
    attempts += rows.attempts.length;
    await writer.transaction(async () => {
      await writer.insert('webhook_events', EVENT_COLUMNS, rows.events);
      await writer.insert('webhook_deliveries', DELIVERY_COLUMNS, rows.deliveries);
      await writer.insert('webhook_attempts', ATTEMPT_COLUMNS, rows.attempts);
    });
  }
  return attempts;
}

const AUDIT_ENTRIES = 100_000;
const AUDIT_ACTIONS = ['client.create', 'client.update', 'user.login', 'webhook.endpoint.update', 'key.rotate'];

async function seedAudit(writer: Writer, start: number, span: number): Promise<void> {
  const rows: Row[] = [];
  const auditIds = ids('aud_', AUDIT_ENTRIES);
  for (let i = 0; i < AUDIT_ENTRIES; i++) {
    const action = AUDIT_ACTIONS[i % AUDIT_ACTIONS.length]!;
    const at = iso(start + Math.floor((i / AUDIT_ENTRIES) * span));
    rows.push([auditIds[i]!, at, 'user', `user-${i % 40}`, action, 'client', `client-${i % 200}`, 'success']);
    rows[i]!.push(null, '127.0.0.1', '{}');
  }
  const columns = ['id', 'occurred_at', 'actor_type', 'actor_id', 'action', 'target_type', 'target_id', 'outcome'];
  columns.push('request_id', 'source_address', 'details');
  await writer.transaction(() => writer.insert('audit_log', columns, rows));
}

interface Timing {
  page: string;
  path: string;
  medianMs: number;
  p95Ms: number;
  status: number;
  items: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** CALLS sequential calls after three warm-ups; the client shares nothing with the timed server but the loopback. */
async function time(page: string, base: string, path: string, token?: string): Promise<Timing> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const once = async (): Promise<{ ms: number; status: number; items: number }> => {
    const started = performance.now();
    const res = await fetch(`${base}${path}`, { headers });
    const body = (await res.json()) as { Items?: unknown[] };
    return { ms: performance.now() - started, status: res.status, items: body.Items?.length ?? 0 };
  };
  for (let i = 0; i < 3; i++) await once();
  const runs = [];
  for (let i = 0; i < CALLS; i++) runs.push(await once());
  const sorted = runs.map((r) => r.ms).sort((a, b) => a - b);
  const round = (ms: number): number => Math.round(ms * 100) / 100;
  const { status, items } = runs[runs.length - 1]!;
  return { page, path, medianMs: round(percentile(sorted, 50)), p95Ms: round(percentile(sorted, 95)), status, items };
}

/** Deep cursors, built as each list builds them for the row at the middle of the list. */
async function deepCursors(dialect: BenchDialect, url: string) {
  const query = async (text: string): Promise<Record<string, unknown>> => {
    if (dialect === 'sqlite') {
      const db = new DatabaseSync(url.slice('sqlite:'.length), { readOnly: true });
      const row = db.prepare(text).get() as Record<string, unknown>;
      db.close();
      return row;
    }
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(text);
    await client.end();
    return rows[0];
  };
  const ms = (v: unknown): number => new Date(v as string).getTime();
  const endpoint = await query(
    `SELECT id, created_at FROM webhook_endpoints ORDER BY created_at, id LIMIT 1 OFFSET ${Math.floor(ENDPOINTS / 2)}`,
  );
  const delivery = await query(
    `SELECT id, created_at FROM webhook_deliveries WHERE endpoint_id = '${HOT}' ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ${Math.floor(DELIVERIES / 20)}`,
  );
  const tx = dialect === 'postgres' ? 'tx_id::text' : "'0'";
  const event = await query(
    `SELECT seq, ${tx} AS tx FROM webhook_events ORDER BY seq LIMIT 1 OFFSET ${Math.floor(DELIVERIES / 4)}`,
  );
  const logged = await query(
    `SELECT id, created_at FROM webhook_deliveries ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ${Math.floor(DELIVERIES / 2)}`,
  );
  const browsed = await query(
    `SELECT seq, occurred_at FROM webhook_events ORDER BY occurred_at DESC, seq DESC LIMIT 1 OFFSET ${Math.floor(DELIVERIES / 4)}`,
  );
  return {
    log: encodeCursor({ t: ms(logged.created_at), k: logged.id as string }),
    browser: encodeCursor({ t: ms(browsed.occurred_at), k: Number(browsed.seq) }),
    endpoints: encodeCursor({ t: ms(endpoint.created_at), i: endpoint.id as string }),
    deliveries: encodeCursor({ t: ms(delivery.created_at), i: delivery.id as string }),
    events: encodeCursor({ t: String(event.tx), s: Number(event.seq) }),
    audit: encodeCursor({ s: Math.floor(AUDIT_ENTRIES / 2) }),
  };
}

async function startBaseline(): Promise<{ url: string; close(): Promise<void> }> {
  const bare = Fastify();
  const items = Array.from({ length: PAGE }, (_, i) => ({ Id: endpointId(i), Url: `https://hooks${i}.example.com/` }));
  bare.get('/baseline', async () => ({ Items: items }));
  const url = await bare.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: () => bare.close() };
}

async function measure(url: string, jwksFile: string, token: string, dialect: BenchDialect): Promise<Timing[]> {
  const cursors = await deepCursors(dialect, url);
  step('cursors');
  const app = await buildApp(loadConfig(benchServerEnv(url, jwksFile)), { logger: false });
  step('built');
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  step('listening');
  const bare = await startBaseline();
  step('baseline');
  try {
    const pages: [string, string][] = [
      ['baseline: bare Fastify route', `${bare.url}/baseline`],
      ['endpoints, first page', `${base}/api/admin/webhook-endpoints?limit=${PAGE}`],
      ['endpoints, deep cursor', `${base}/api/admin/webhook-endpoints?limit=${PAGE}&cursor=${cursors.endpoints}`],
      ['deliveries, first page', `${base}/api/webhooks/${HOT}/deliveries?limit=${PAGE}`],
      ['deliveries, deep cursor', `${base}/api/webhooks/${HOT}/deliveries?limit=${PAGE}&cursor=${cursors.deliveries}`],
      ['events by type, first page', `${base}/api/events?type=order.paid&limit=${PAGE}`],
      ['events by type, deep cursor', `${base}/api/events?type=order.paid&limit=${PAGE}&after=${cursors.events}`],
      ['delivery log (admin), first page', `${base}/api/admin/webhook-deliveries?limit=${PAGE}`],
      ['delivery log (admin), deep cursor', `${base}/api/admin/webhook-deliveries?limit=${PAGE}&cursor=${cursors.log}`],
      ['delivery log (admin), state=failed', `${base}/api/admin/webhook-deliveries?limit=${PAGE}&state=failed`],
      ['delivery log (admin), hot endpoint', `${base}/api/admin/webhook-deliveries?limit=${PAGE}&endpoint_id=${HOT}`],
      [
        'delivery log (admin), event_type=order.paid',
        `${base}/api/admin/webhook-deliveries?limit=${PAGE}&event_type=order.paid`,
      ],
      ['event browser (admin), first page', `${base}/api/admin/events?limit=${PAGE}`],
      ['event browser (admin), deep cursor', `${base}/api/admin/events?limit=${PAGE}&cursor=${cursors.browser}`],
      ['event browser (admin), type=order.paid', `${base}/api/admin/events?limit=${PAGE}&type=order.paid`],
      ['audit, first page', `${base}/api/admin/audit?limit=${PAGE}`],
      ['audit, deep cursor', `${base}/api/admin/audit?limit=${PAGE}&cursor=${cursors.audit}`],
    ];
    const results: Timing[] = [];
    for (const [page, full] of pages) {
      step(page);
      const { origin, pathname, search } = new URL(full);
      results.push(await time(page, origin, pathname + search, full.startsWith(bare.url) ? undefined : token));
    }
    return results;
  } finally {
    await bare.close();
    await app.close();
  }
}

async function main(): Promise<void> {
  const database = await createBenchDatabase(DIALECT, process.env.BENCH_POSTGRES_URL);
  const issuer = await createBenchIssuer();
  try {
    // Signet migrates the empty database; then the seed writes straight into its tables.
    const config = loadConfig(benchServerEnv(database.url, issuer.jwksFile));
    const migrated = await buildApp(config, { logger: false });
    await migrated.ready();
    await migrated.close();
    const writer =
      DIALECT === 'sqlite' ? sqliteWriter(database.url.slice('sqlite:'.length)) : await postgresWriter(database.url);
    // Inside EVENT_RETENTION (30 days): the dispatcher's purge finds nothing to delete.
    const span = 28 * DAY_MS;
    const start = Date.now() - span - DAY_MS;
    const seeding = performance.now();
    await seedEndpoints(writer, start - ENDPOINTS * 1000);
    const attempts = await seedDeliveries(writer, start, span);
    await seedAudit(writer, start, span);
    await writer.finish();
    step('seeded');
    const seedSeconds = Math.round((performance.now() - seeding) / 100) / 10;
    const token = await issuer.token('ES256', 'admin:read webhooks:manage events:read');
    const timings = await measure(database.url, issuer.jwksFile, token, DIALECT);
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    const counts = { endpoints: ENDPOINTS, deliveries: DELIVERIES, events: DELIVERIES / 2, attempts };
    console.log(
      JSON.stringify(
        { date: new Date().toISOString(), machine, dialect: DIALECT, counts, seedSeconds, timings },
        null,
        2,
      ),
    );
  } finally {
    issuer.cleanup();
    if (process.env.BENCH_KEEP === '1') console.error(`kept the database: ${database.url}`);
    else await database.drop();
  }
}

const step = (s: string) => process.env.BENCH_TRACE && console.error(`[${new Date().toISOString()}] ${s}`);
await main();
