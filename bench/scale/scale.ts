// Cost as data grows (docs/benchmarks.md, "Cost as data grows and memory"): the same requests and background jobs
// against a nearly empty database and against one holding 1,000,000 orders, 1,000,000 webhook events and 4,000,000
// deliveries, in one run; each figure of the large database is given as a ratio of the small one's (target ≥ 0.85).
//
//   npm run bench -- scale                 SQLite (and PostgreSQL with BENCH_POSTGRES_URL)
//   BENCH_SCALE_DIALECTS=sqlite            one dialect only
//   BENCH_SCALE_ORDERS=100000              a smaller large database (events = orders, 4 deliveries each)
//   BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (1), BENCH_CONNECTIONS (20), BENCH_SCENARIOS (ids to run)
//   BENCH_SCALE_UNBOUNDED=1                also the unbounded event purge of before (slow: see below)
//   BENCH_SQLITE_TIMING=<dir>              each SQLite purge's statements: time, calls, longest call
//
// The data is loaded through SQL in bulk (bench/scale/scale-seed.ts), after Signet migrated the empty files.
// The small database gets the same shape at 1/1000 (1,000 orders, 1,000 events, 4,000 deliveries; 20 orders
// and events per customer in both), so that every page it is asked for is as full as the large one's: the
// ratio is what size alone costs.
//
// Measured, small then large, scenario by scenario (servers in a child process, bench/scale/scale-server.ts):
//   get            GET /api/orders/{id}, a random id of the whole table
//   post           POST /api/orders with a fresh Idempotency-Key
//   list-deep      GET /api/orders?limit=50 with a cursor half way down the table
//   list-status    the same, filtered by Status (its cursor carries the filter)
//   events-deep    GET /api/events?limit=50 after a position half way through the feed (a client)
//   events-type    the same, ?type=order.paid
//   events-user    the same for an end user (their own orders' events only)
// then in this process, on each database:
//   claim          the dispatcher's claim (dispatch.repository.ts claimBatch) of 16 out of 64 due
//                  deliveries, with the millions of settled ones present; claims per second
//   purge-events   the event retention purge of a 10,000-event backlog (40,000 deliveries and attempts)
//   purge-keys     the idempotency-key purge of 100,000 expired keys
//   purge-audit    the audit trail purge of 50,000 expired entries
// Each purge runs while a writer inserts orders one after the other through the same database handle
// (as the API would): its longest wait is the purge's writer stall (target ≤ 50 ms). With
// BENCH_SCALE_UNBOUNDED=1 the single unbounded DELETE the event purge replaced is measured the same way,
// on a backlog of 100 events, for comparison.
// A busy machine stretches the writer's wall-clock wait (the OS runs other processes meanwhile), so the
// table also gives the most CPU time any one purge statement took: how long it holds SQLite's event loop.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type AutocannonRequest } from 'autocannon';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import {
  sql,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';
import { purgeAuditBefore } from '../../src/audit/retention.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import { openDatabase, type Db, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { encodeCursor } from '../../src/http/representation/cursor.ts';
import { purgeExpiredKeys } from '../../src/idempotency/idempotency.ts';
import { claimBatch } from '../../src/webhooks/store/dispatch.repository.ts';
import { purgeEvents } from '../../src/webhooks/store/events.repository.ts';
import { createBenchDatabase, BENCH_WEBHOOK_SECRET_KEY, type BenchDatabase } from '../lib/databases.ts';
import { SecretBox } from '../../src/webhooks/store/secrets.ts';
import { forkBenchChild } from '../lib/child-control.ts';
import { customerId, ENDPOINTS, seedBacklog, seedScale, type Backlog, type ScaleCounts } from './scale-seed.ts';
import type { ScaleServerMessage } from './scale-server.ts';
import { BENCH_ISSUER, BENCH_RESOURCE } from '../api/tokens.ts';

type Dialect = 'sqlite' | 'postgres';

const here = dirname(fileURLToPath(import.meta.url));
const num = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
};
const SECONDS = num('BENCH_SECONDS', 5);
const WARMUP_SECONDS = num('BENCH_WARMUP_SECONDS', 1);
const CONNECTIONS = num('BENCH_CONNECTIONS', 20);
const ORDERS = num('BENCH_SCALE_ORDERS', 1_000_000);
const ONLY = process.env.BENCH_SCENARIOS ? new Set(process.env.BENCH_SCENARIOS.split(',')) : undefined;
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL || undefined;
const DIALECTS = (process.env.BENCH_SCALE_DIALECTS?.split(',') ?? ['sqlite', 'postgres']).filter(
  (d): d is Dialect => d === 'sqlite' || (d === 'postgres' && POSTGRES_URL !== undefined),
);
/** Also time the unbounded event purge Signet used before batching (on SQLite at a million events: many minutes). */
const UNBOUNDED = process.env.BENCH_SCALE_UNBOUNDED === '1';
/** BENCH_SQLITE_TIMING=<dir>: each purge's SQLite statements, with the longest single call (bench/lib/sqlite-timing.ts). */
const sqliteTiming = process.env.BENCH_SQLITE_TIMING
  ? (await import('../lib/sqlite-timing.ts')).installSqliteTiming(process.env.BENCH_SQLITE_TIMING)
  : undefined;
const TARGET = 0.85;
const MAX_STALL_MS = 50;
const LARGE: ScaleCounts = { orders: ORDERS, events: ORDERS, deliveriesPerEvent: 4 };
const SMALL: ScaleCounts = {
  orders: Math.ceil(ORDERS / 1000),
  events: Math.ceil(ORDERS / 1000),
  deliveriesPerEvent: 4,
};
const BACKLOG: Backlog = { events: 10_000, deliveriesPerEvent: 4, keys: 100_000, audit: 50_000 };
const DAY_MS = 86_400_000;

interface Row {
  dialect: Dialect;
  id: string;
  label: string;
  unit: string;
  small: number;
  large: number;
  /** large / small for throughput (higher is better). */
  ratio: number;
  /** Longest writer wait during a purge, small and large (ms). */
  stallMs?: [number, number];
  /** The most CPU one purge statement took, small and large (ms). */
  statementCpuMs?: [number, number];
  /** Server CPU µs per request, small and large. */
  cpuUs?: [number, number];
  p99Ms?: [number, number];
  notes?: string;
}

const log = (line: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

// ---------------------------------------------------------------------------------------------
// Tokens: a client and end users, from a local issuer the servers trust (as bench/api/tokens.ts, with a subject)

interface Issuer {
  jwksFile: string;
  token(scope: string, subject?: string): Promise<string>;
  cleanup(): void;
}

async function createIssuer(): Promise<Issuer> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const dir = mkdtempSync(join(tmpdir(), 'signet-scale-jwks-'));
  const jwksFile = join(dir, 'jwks.json');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'scale-es256', alg: 'ES256', use: 'sig' };
  writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
  const sign = (key: CryptoKey, scope: string, subject: string) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: BENCH_ISSUER, aud: BENCH_RESOURCE, sub: subject, client_id: 'bench-client', scope })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'scale-es256' })
      .setIssuedAt(now)
      .setExpirationTime(now + 7200)
      .setJti(randomUUID())
      .sign(key);
  };
  return {
    jwksFile,
    token: (scope, subject = 'bench-client') => sign(privateKey, scope, subject),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// ---------------------------------------------------------------------------------------------
// Databases

interface Prepared {
  size: 'small' | 'large';
  counts: ScaleCounts;
  database: BenchDatabase;
  /** A position half way through the event feed (tx on PostgreSQL). */
  midEvent: { tx: string; seq: number };
}

async function prepare(dialect: Dialect, size: 'small' | 'large', counts: ScaleCounts): Promise<Prepared> {
  const database = await createBenchDatabase(dialect, POSTGRES_URL);
  const handle = openDatabase(database.url);
  try {
    await migrateToLatest(handle);
  } finally {
    await handle.db.destroy();
  }
  const started = performance.now();
  await seedScale(dialect, database.url, counts, (step) => log(`  ${dialect} ${size}: ${step}`));
  log(`${dialect} ${size}: seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const seq = Math.floor(counts.events / 2);
  const reader = openDatabase(database.url);
  try {
    const tx =
      dialect === 'postgres'
        ? (
            await sql<{ tx: string }>`select tx_id::text as tx from webhook_events where seq = ${seq}`.execute(
              reader.db,
            )
          ).rows[0]!.tx
        : '0';
    return { size, counts, database, midEvent: { tx, seq } };
  } finally {
    await reader.db.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP scenarios

interface HttpScenario {
  id: string;
  label: string;
  expect: number;
  requests: (p: Prepared) => AutocannonRequest[];
}

function httpScenarios(tokens: { client: string; user: string; userSubject: string }): HttpScenario[] {
  const auth = (token: string) => ({ authorization: `Bearer ${token}` });
  const client = auth(tokens.client);
  const after = (p: Prepared) => encodeCursor({ t: p.midEvent.tx, s: p.midEvent.seq });
  return [
    {
      id: 'get',
      label: 'GET /api/orders/{id}, random id',
      expect: 200,
      requests: (p) => [
        {
          method: 'GET',
          path: '/api/orders/1',
          headers: client,
          setupRequest: (r) => ({ ...r, path: `/api/orders/${1 + Math.floor(Math.random() * p.counts.orders)}` }),
        },
      ],
    },
    {
      id: 'post',
      label: 'POST /api/orders + Idempotency-Key',
      expect: 201,
      requests: () => [
        {
          method: 'POST',
          path: '/api/orders',
          headers: { ...client, 'content-type': 'application/json' },
          body: JSON.stringify({ CustomerId: customerId(7), Total: 19.99, Currency: 'USD' }),
          setupRequest: (r) => ({ ...r, headers: { ...r.headers, 'idempotency-key': randomUUID() } }),
        },
      ],
    },
    {
      id: 'list-deep',
      label: 'GET /api/orders?limit=50, cursor half way',
      expect: 200,
      requests: (p) => [
        {
          method: 'GET',
          path: `/api/orders?limit=50&cursor=${encodeCursor({ b: Math.floor(p.counts.orders / 2), s: '', c: '' })}`,
          headers: client,
        },
      ],
    },
    {
      id: 'list-status',
      label: '… ?Status=paid, cursor half way',
      expect: 200,
      requests: (p) => [
        {
          method: 'GET',
          path: `/api/orders?limit=50&cursor=${encodeCursor({ b: Math.floor(p.counts.orders / 2), s: 'paid', c: '' })}`,
          headers: client,
        },
      ],
    },
    {
      id: 'events-deep',
      label: 'GET /api/events?limit=50, after half way (client)',
      expect: 200,
      requests: (p) => [{ method: 'GET', path: `/api/events?limit=50&after=${after(p)}`, headers: client }],
    },
    {
      id: 'events-type',
      label: '… ?type=order.paid',
      expect: 200,
      requests: (p) => [
        { method: 'GET', path: `/api/events?limit=50&type=order.paid&after=${after(p)}`, headers: client },
      ],
    },
    {
      id: 'events-user',
      label: '… as an end user (own orders only)',
      expect: 200,
      requests: (p) => [{ method: 'GET', path: `/api/events?limit=50&after=${after(p)}`, headers: auth(tokens.user) }],
    },
  ];
}

interface Measured {
  rps: number;
  p99: number;
  cpuUs: number;
  unexpected: string | undefined;
}

type Child = Awaited<ReturnType<typeof forkBenchChild<ScaleServerMessage>>>;

async function measureHttp(child: Child, port: number, requests: AutocannonRequest[], expect: number, label: string) {
  const cannon = (duration: number) =>
    autocannon({ url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration, timeout: 20, requests });
  if (WARMUP_SECONDS > 0) await cannon(WARMUP_SECONDS);
  await child.request({ type: 'measure-start', label }, 'measure-started');
  const result = await cannon(SECONDS);
  const server = (await child.request({ type: 'measure-stop', label }, 'measured')) as Extract<
    ScaleServerMessage,
    { type: 'measured' }
  >;
  const codes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([c, s]) => [c, s.count]));
  const bad = Object.entries(codes).filter(([c]) => Number(c) !== expect);
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    cpuUs: server.requests > 0 ? (server.cpuUserUs + server.cpuSystemUs) / server.requests : NaN,
    unexpected: bad.length > 0 || result.errors > 0 ? `${JSON.stringify(codes)} errors ${result.errors}` : undefined,
  } satisfies Measured;
}

async function runHttp(dialect: Dialect, dbs: Prepared[], issuer: Issuer): Promise<Row[]> {
  const ids = ['get', 'post', 'list-deep', 'list-status', 'events-deep', 'events-type', 'events-user'];
  if (ONLY && !ids.some((id) => ONLY.has(id))) return [];
  const child = await forkBenchChild<ScaleServerMessage>(
    join(here, 'scale-server.ts'),
    {
      BENCH_JWKS_FILE: issuer.jwksFile,
      BENCH_SCALE_APPS: JSON.stringify(dbs.map((p) => ({ name: p.size, url: p.database.url }))),
    },
    'scale server',
  );
  const ports = (child.ready as Extract<ScaleServerMessage, { type: 'ready' }>).ports;
  // A customer of both databases (the small one has SMALL.orders / ORDERS_PER_CUSTOMER): 20 events each.
  const userSubject = customerId(25);
  const tokens = {
    client: await issuer.token('orders:read orders:write events:read'),
    user: await issuer.token('orders:read events:read', userSubject),
    userSubject,
  };
  const rows: Row[] = [];
  try {
    for (const scenario of httpScenarios(tokens)) {
      if (ONLY && !ONLY.has(scenario.id)) continue;
      const results: Measured[] = [];
      for (const p of dbs) {
        const m = await measureHttp(
          child,
          ports[p.size]!,
          scenario.requests(p),
          scenario.expect,
          `${dialect}-${scenario.id}-${p.size}`,
        );
        log(
          `${dialect} ${scenario.id.padEnd(12)} ${p.size.padEnd(5)} ${m.rps.toFixed(0).padStart(6)} req/s  p99 ${m.p99} ms  ${m.cpuUs.toFixed(0)} µs CPU/req${m.unexpected ? `  !! ${m.unexpected}` : ''}`,
        );
        results.push(m);
      }
      const [small, large] = results as [Measured, Measured];
      rows.push({
        dialect,
        id: scenario.id,
        label: scenario.label,
        unit: 'req/s',
        small: small.rps,
        large: large.rps,
        ratio: large.rps / small.rps,
        cpuUs: [small.cpuUs, large.cpuUs],
        p99Ms: [small.p99, large.p99],
        notes: [small.unexpected, large.unexpected].filter(Boolean).join('; ') || undefined,
      });
    }
  } finally {
    await child.stop();
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// The dispatcher's claim

const CLAIM_ENDPOINT = `whep_${'f'.repeat(32)}`;
const DUE = 64;

/** 64 deliveries due a minute ago, to one endpoint of their own, for events already there. */
async function addDueDeliveries(db: Db, now: Date): Promise<void> {
  const at = toDbTime(new Date(now.getTime() - 60_000));
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: CLAIM_ENDPOINT,
      owner: 'bench-client',
      url: 'https://hooks.example.com/claim',
      description: 'claim',
      event_types: '["*"]',
      enabled: 0,
      disabled_reason: 'manual',
      secret: new SecretBox(Buffer.from(BENCH_WEBHOOK_SECRET_KEY, 'base64url')).seal(CLAIM_ENDPOINT, 'whsec_claim'),
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: at,
      updated_at: at,
    })
    .execute();
  const events = await db.selectFrom('webhook_events').select('id').orderBy('seq').limit(DUE).execute();
  await db
    .insertInto('webhook_deliveries')
    .values(
      events.map((e, i) => ({
        id: `dlv_claim${String(i).padStart(27, '0')}`,
        event_id: e.id,
        endpoint_id: CLAIM_ENDPOINT,
        state: 'pending' as const,
        attempt_count: 0,
        retry_index: 0,
        next_attempt_at: at,
        lease_owner: null,
        lease_until: null,
        last_status_code: null,
        last_error: null,
        created_at: at,
        updated_at: at,
      })),
    )
    .execute();
}

/** Claims of 16 for SECONDS; each claim's leases end before the next claim's clock, so the same rows come back. */
async function claimRate(handle: DatabaseHandle): Promise<number> {
  const base = Date.now();
  await addDueDeliveries(handle.db, new Date(base));
  let clock = 0;
  let claims = 0;
  let until = performance.now() + WARMUP_SECONDS * 1000;
  let warm = false;
  for (;;) {
    if (performance.now() >= until) {
      if (warm) break;
      // Warmed up (statements prepared, code optimised, pages cached): count from here.
      warm = true;
      claims = 0;
      until = performance.now() + SECONDS * 1000;
    }
    const now = new Date(base + clock * 10);
    const claimed = await claimBatch(handle.db, handle.dialect, {
      now,
      leaseUntil: new Date(now.getTime() + 5),
      leaseToken: `claim-${claims}`,
      limit: 16,
      endpointLimit: DUE,
      inFlight: new Map(),
    });
    if (claimed.length !== 16) throw new Error(`claim ${clock} leased ${claimed.length} deliveries, not 16`);
    claims++;
    clock++;
  }
  await handle.db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', CLAIM_ENDPOINT).execute();
  await handle.db.deleteFrom('webhook_endpoints').where('id', '=', CLAIM_ENDPOINT).execute();
  return claims / SECONDS;
}

// ---------------------------------------------------------------------------------------------
// Purges, with a writer alongside

/**
 * Inserts orders one after the other until stopped. The stall is the longest gap between two
 * completed inserts (less the 1 ms pause between them): on SQLite a purge statement holds the event
 * loop, so the writer's next insert cannot even start until it ends; timing the insert alone would
 * miss that wait.
 */
function startWriter(db: Db): { stop(): Promise<{ maxMs: number; writes: number }> } {
  let stopping = false;
  let maxMs = 0;
  let writes = 0;
  const loop = (async () => {
    let last = performance.now();
    while (!stopping) {
      const at = toDbTime(new Date());
      await db
        .insertInto('orders')
        .values({
          customer_id: customerId(1),
          total_minor: 100,
          currency: 'USD',
          status: 'pending',
          version: 1,
          created_at: at,
          updated_at: at,
        })
        .execute();
      const now = performance.now();
      maxMs = Math.max(maxMs, now - last - 1);
      last = now;
      writes++;
      await new Promise((resolve) => setTimeout(resolve, 1)); // a steady trickle, not a flood
    }
  })();
  return {
    async stop() {
      stopping = true;
      await loop;
      return { maxMs, writes };
    },
  };
}

/** The event purge before batching: two unbounded DELETEs (kept to measure what batching changed). */
async function unboundedEventPurge(db: Db, cutoff: Date): Promise<number> {
  const old = db
    .selectFrom('webhook_events as e')
    .select('e.id')
    .where('e.occurred_at', '<', toDbTime(cutoff))
    .where((w) =>
      w.not(
        w.exists(
          w
            .selectFrom('webhook_deliveries as p')
            .select('p.id')
            .whereRef('p.event_id', '=', 'e.id')
            .where('p.state', '=', 'pending'),
        ),
      ),
    );
  await db.deleteFrom('webhook_deliveries').where('event_id', 'in', old).execute();
  const result = await db.deleteFrom('webhook_events').where('id', 'in', old).executeTakeFirst();
  return Number(result.numDeletedRows);
}

interface PurgeResult {
  rowsPerSecond: number;
  stallMs: number;
  /** The most CPU time one purge statement took (what it holds the event loop for on SQLite, on an idle machine). */
  statementCpuMs: number;
  deleted: number;
}

/**
 * Records the CPU time from each statement's start to its result. On SQLite a statement runs on the
 * event loop, so this is how long it held the writer, without the time the OS gave other processes
 * (on a busy machine the writer's wall-clock wait includes that too).
 */
class StatementCpu implements KyselyPlugin {
  maxMs = 0;
  readonly #started = new Map<unknown, NodeJS.CpuUsage>();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.#started.set(args.queryId, process.cpuUsage());
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const started = this.#started.get(args.queryId);
    if (started) {
      this.#started.delete(args.queryId);
      const { user, system } = process.cpuUsage(started);
      this.maxMs = Math.max(this.maxMs, (user + system) / 1000);
    }
    return args.result;
  }
}

async function timedPurge(
  handle: DatabaseHandle,
  purge: (db: Db) => Promise<number>,
  expected: number,
): Promise<PurgeResult> {
  // Warm the writer (prepared statements, pages) so its first insert is not counted as a stall.
  const warm = startWriter(handle.db);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await warm.stop();
  const writer = startWriter(handle.db);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const cpu = new StatementCpu();
  const started = performance.now();
  const deleted = await purge(handle.db.withPlugin(cpu));
  const seconds = (performance.now() - started) / 1000;
  const { maxMs } = await writer.stop();
  if (deleted !== expected) throw new Error(`the purge deleted ${deleted} rows, not ${expected}`);
  return { rowsPerSecond: deleted / seconds, stallMs: maxMs, statementCpuMs: cpu.maxMs, deleted };
}

async function runJobs(dialect: Dialect, dbs: Prepared[]): Promise<Row[]> {
  const results = new Map<string, (PurgeResult | number)[]>();
  const add = (id: string, value: PurgeResult | number) => results.set(id, [...(results.get(id) ?? []), value]);
  for (const p of dbs) {
    const handle = openDatabase(p.database.url);
    try {
      if (!ONLY || ONLY.has('claim')) {
        const rate = await claimRate(handle);
        log(`${dialect} claim        ${p.size.padEnd(5)} ${rate.toFixed(0)} claims/s`);
        add('claim', rate);
      }
      const cutoff = (days: number) => new Date(Date.now() - days * DAY_MS);
      const purges: [string, (db: Db) => Promise<number>, Partial<Backlog>, number][] = [
        ['purge-events', (db) => purgeEvents(db, cutoff(30)), { events: BACKLOG.events }, BACKLOG.events],
        ['purge-keys', (db) => purgeExpiredKeys(db, new Date()), { keys: BACKLOG.keys }, BACKLOG.keys],
        ['purge-audit', (db) => purgeAuditBefore(db, cutoff(365)), { audit: BACKLOG.audit }, BACKLOG.audit],
        // A hundredth of the backlog: its plan reads every pending delivery once per event (see
        // events.repository.ts); with a million events the full backlog takes many minutes in one statement.
        [
          'purge-events-unbounded',
          (db) => unboundedEventPurge(db, cutoff(30)),
          { events: BACKLOG.events / 100 },
          BACKLOG.events / 100,
        ],
      ];
      // Warm-up: the purges' statements prepared and their code optimised before anything is timed.
      await seedBacklog(dialect, p.database.url, 'warm', {
        events: 100,
        deliveriesPerEvent: 4,
        keys: 2000,
        audit: 2000,
      });
      await purgeEvents(handle.db, cutoff(30));
      await purgeExpiredKeys(handle.db, new Date());
      await purgeAuditBefore(handle.db, cutoff(365));
      for (const [id, purge, backlog, expected] of purges) {
        if (ONLY && !ONLY.has(id)) continue;
        if (id.endsWith('unbounded') && !UNBOUNDED) continue;
        const full: Backlog = {
          events: 0,
          keys: 0,
          audit: 0,
          deliveriesPerEvent: BACKLOG.deliveriesPerEvent,
          ...backlog,
        };
        await seedBacklog(dialect, p.database.url, id.replace(/[^a-z]/g, '').slice(0, 12), full);
        sqliteTiming?.reset();
        const r = await timedPurge(handle, purge, expected);
        sqliteTiming?.write(`scale-${dialect}-${id}-${p.size}`, r.deleted);
        log(
          `${dialect} ${id.padEnd(12)} ${p.size.padEnd(5)} ${r.rowsPerSecond.toFixed(0)} rows/s, writer stall ${r.stallMs.toFixed(1)} ms`,
        );
        add(id, r);
      }
    } finally {
      await handle.db.destroy();
    }
  }
  const rows: Row[] = [];
  for (const [id, [small, large]] of results) {
    if (typeof small === 'number' && typeof large === 'number')
      rows.push({
        dialect,
        id,
        label: 'dispatcher claim (16 of 64 due)',
        unit: 'claims/s',
        small,
        large,
        ratio: large / small,
      });
    else if (typeof small === 'object' && typeof large === 'object')
      rows.push({
        dialect,
        id,
        label: `${id === 'purge-keys' ? 'idempotency keys' : id === 'purge-audit' ? 'audit entries' : 'events'} purged${id.endsWith('unbounded') ? ' (unbounded DELETE, before)' : ''}`,
        unit: `${id === 'purge-keys' ? 'keys' : id === 'purge-audit' ? 'entries' : 'events'}/s`,
        small: small.rowsPerSecond,
        large: large.rowsPerSecond,
        ratio: large.rowsPerSecond / small.rowsPerSecond,
        stallMs: [small.stallMs, large.stallMs],
        statementCpuMs: [small.statementCpuMs, large.statementCpuMs],
      });
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------

function table(rows: Row[]): string {
  const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
  const lines = [
    '| Dialect | Scenario | Small | Large | Large ÷ small | CPU µs/req (small → large) | Writer stall ms (small / large) | Longest purge statement, ms CPU (small / large) |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const pass = r.id.endsWith('unbounded') ? '' : r.ratio >= TARGET ? ' ✓' : ' ✗';
    const stall = r.stallMs
      ? `${r.stallMs[0].toFixed(1)} / ${r.stallMs[1].toFixed(1)}${r.id.endsWith('unbounded') ? '' : r.stallMs[1] <= MAX_STALL_MS ? ' ✓' : ' ✗'}`
      : '';
    const cpu = r.cpuUs ? `${r.cpuUs[0].toFixed(0)} → ${r.cpuUs[1].toFixed(0)}` : '';
    const statement = r.statementCpuMs ? `${r.statementCpuMs[0].toFixed(1)} / ${r.statementCpuMs[1].toFixed(1)}` : '';
    lines.push(
      `| ${r.dialect} | ${r.label} | ${fmt(r.small)} ${r.unit} | ${fmt(r.large)} ${r.unit} | ${r.ratio.toFixed(2)}×${pass} | ${cpu} | ${stall} | ${statement} |${r.notes ? ` ${r.notes}` : ''}`,
    );
  }
  return lines.join('\n');
}

export async function runScaleBench(): Promise<number> {
  const issuer = await createIssuer();
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  log(
    `scale benchmark: ${machine}; large ${JSON.stringify(LARGE)}, small ${JSON.stringify(SMALL)}; ${SECONDS} s per scenario`,
  );
  const rows: Row[] = [];
  const created: Prepared[] = [];
  // Interrupted: the databases (gigabytes) go anyway.
  const interrupted = async () => {
    for (const p of created) await p.database.drop().catch(() => undefined);
    process.exit(130);
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  try {
    for (const dialect of DIALECTS) {
      const dbs: Prepared[] = [];
      for (const [size, counts] of [
        ['small', SMALL],
        ['large', LARGE],
      ] as const) {
        const p = await prepare(dialect, size, counts);
        created.push(p);
        dbs.push(p);
      }
      rows.push(...(await runHttp(dialect, dbs, issuer)));
      rows.push(...(await runJobs(dialect, dbs)));
    }
  } finally {
    for (const p of created) await p.database.drop().catch((err) => log(`could not drop a database: ${err}`));
    issuer.cleanup();
  }
  console.log(
    `\nScale: ${machine}, ${new Date().toISOString()}\n${ENDPOINTS} endpoints; large ${JSON.stringify(LARGE)}; small ${JSON.stringify(SMALL)}\n`,
  );
  console.log(table(rows));
  const failed = rows.filter(
    (r) => !r.id.endsWith('unbounded') && (r.ratio < TARGET || (r.stallMs && r.stallMs[1] > MAX_STALL_MS) || r.notes),
  );
  if (failed.length > 0) console.log(`\nBelow target: ${failed.map((r) => `${r.dialect}:${r.id}`).join(', ')}`);
  return failed.length > 0 ? 1 : 0;
}
