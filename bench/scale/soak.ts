// Soak: does one Signet process keep its memory bounded under long mixed load (docs/operations/monitoring.md,
// "Memory")?
//
//   npx node bench/scale/soak.ts                        10 minutes, SQLite, one `signet serve` process
//   SOAK_SECONDS=120 npx node bench/scale/soak.ts       a quick run
//   SOAK_HEAP_SNAPSHOTS=1 npx node bench/scale/soak.ts  also a heap snapshot of the server after the warm-up and
//                                                 at the end (into the run's directory, for DevTools' Comparison
//                                                 view), to find what grows
//
// The server is the real command (`node bin/signet.js serve`, LOG_LEVEL=info with stdout to /dev/null,
// dispatcher on) over a fresh SQLite file. Load, paced (open loop), for the whole run: authenticated reads
// (GET /api/orders/{id}, some conditional → 304), creates (POST /api/orders with a fresh Idempotency-Key;
// each one an order.created delivery), list pages (orders and the event feed), and client-credentials token
// requests at /oauth/token. Every order.created is delivered to a local receiver (bench/webhooks/webhooks-receiver.ts)
// that verifies each signature. The server's RSS (VmRSS of /proc/<pid>/status) is sampled every
// SOAK_SAMPLE_SECONDS; the verdict: the largest RSS must stay under SOAK_MAX_RSS_MB (250) and the
// least-squares slope of the last half of the run must not be positive beyond SOAK_MAX_SLOPE_MB_PER_MIN
// (0.5 MB/min: 2.5 MB over the last 5 minutes, within the heap's own sawtooth).
// Other settings: SOAK_READS (200/s), SOAK_CREATES (60/s), SOAK_LISTS (20/s), SOAK_TOKENS (20/s),
// SOAK_NODE_FLAGS (Node options for the server; by default those of `npm start`, "" for none), SOAK_MAX_IN_FLIGHT (64
// per kind; a request beyond that is counted as skipped, not queued), SOAK_OUT (a file for the JSON result; it is
// printed anyway). Exit code 1 when a bound is broken or requests failed.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { createClient } from '../../src/auth-server/clients/clients.repository.ts';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { BENCH_WEBHOOK_SECRET_KEY } from '../lib/databases.ts';
import { forkBenchChild } from '../lib/child-control.ts';
import type { GroupStats, ReceiverMessage, ReceiverRequest } from '../webhooks/webhooks-receiver.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(dirname(here));

const num = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
};
const SECONDS = num('SOAK_SECONDS', 600);
const SAMPLE_SECONDS = num('SOAK_SAMPLE_SECONDS', 5);
const MAX_RSS_MB = num('SOAK_MAX_RSS_MB', 250);
const MAX_SLOPE = num('SOAK_MAX_SLOPE_MB_PER_MIN', 0.5);
const MAX_IN_FLIGHT = num('SOAK_MAX_IN_FLIGHT', 64);
const RATES = {
  read: num('SOAK_READS', 200),
  create: num('SOAK_CREATES', 60),
  list: num('SOAK_LISTS', 20),
  token: num('SOAK_TOKENS', 20),
};
const HEAP_SNAPSHOTS = process.env.SOAK_HEAP_SNAPSHOTS === '1';
const TICK_MS = 100;

type Kind = keyof typeof RATES;

interface KindStats {
  sent: number;
  skipped: number;
  statuses: Record<string, number>;
  errors: number;
  maxMs: number;
  latencies: number[];
}

interface Sample {
  /** Seconds since the load started. */
  t: number;
  rssMb: number;
  /** V8 heap in use and reserved, and memory outside it (from the server's own /metrics). */
  heapUsedMb?: number;
  heapTotalMb?: number;
  externalMb?: number;
}

const HEAP_METRICS = {
  heapUsedMb: 'nodejs_heap_size_used_bytes',
  heapTotalMb: 'nodejs_heap_size_total_bytes',
  externalMb: 'nodejs_external_memory_bytes',
} as const;

/** The server's heap figures from its Prometheus metrics (prom-client's default metrics), on the metrics listener. */
async function heapOf(pool: Pool): Promise<Partial<Sample>> {
  try {
    const response = await pool.request({ method: 'GET', path: '/metrics' });
    const text = await response.body.text();
    const out: Partial<Sample> = {};
    for (const [key, metric] of Object.entries(HEAP_METRICS)) {
      const value = Number(new RegExp(`^${metric} (\\S+)`, 'm').exec(text)?.[1]);
      if (Number.isFinite(value)) out[key as keyof typeof HEAP_METRICS] = Math.round((value / 1048576) * 10) / 10;
    }
    return out;
  } catch {
    return {};
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Migrates the fresh database and registers the load's confidential client (before the server starts). */
async function prepareDatabase(url: string): Promise<{ clientId: string; clientSecret: string }> {
  const handle = openDatabase(url);
  try {
    await migrateToLatest(handle);
    const { record, clientSecret } = await createClient(handle.db, {
      name: 'Soak service',
      type: 'confidential',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['orders:read', 'orders:write', 'webhooks:manage', 'events:read'],
      corsOrigins: [],
      firstParty: false,
    });
    return { clientId: record.clientId, clientSecret: clientSecret! };
  } finally {
    await handle.db.destroy();
  }
}

/** The Node flags of `npm start` (package.json), so that the soak measures the command operators run. */
function startScriptFlags(): string {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  return (scripts.start.match(/^node ((?:--\S+ )*)bin\/signet\.js/)?.[1] ?? '').trim();
}

function startSignet(dir: string, env: Record<string, string>): ChildProcess {
  const flags = [
    // Not SIGUSR2: close-with-grace (src/main.ts) shuts the server down on it.
    ...(HEAP_SNAPSHOTS ? ['--heapsnapshot-signal=SIGPWR'] : []),
    ...(process.env.SOAK_NODE_FLAGS ?? startScriptFlags()).split(' ').filter(Boolean),
  ];
  return spawn(process.execPath, [...flags, join(root, 'bin', 'signet.js'), 'serve'], {
    cwd: dir, // heap snapshots land here
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function waitReady(base: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`signet serve exited (${child.exitCode}) before it was ready`);
    try {
      const response = await fetch(`${base}/readyz`);
      last = `${response.status} ${await response.text()}`;
      if (response.ok) return;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`signet serve not ready within 60 s: ${last}`);
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return Math.round((kb / 1024) * 10) / 10;
}

/** The server's CPU time so far (user + system, /proc/<pid>/stat fields 14 and 15), in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
}

/** Least-squares slope of RSS over time, MB per minute. */
function slopeMbPerMinute(samples: Sample[]): number {
  const n = samples.length;
  if (n < 2) return NaN;
  const mt = samples.reduce((s, x) => s + x.t, 0) / n;
  const mr = samples.reduce((s, x) => s + x.rssMb, 0) / n;
  let num = 0;
  let den = 0;
  for (const { t, rssMb: r } of samples) {
    num += (t - mt) * (r - mr);
    den += (t - mt) ** 2;
  }
  return Math.round((num / den) * 60 * 1000) / 1000;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 10) / 10;
}

interface Target {
  pool: Pool;
  token: string;
  orderId: number;
  etag: string;
  tokenForm: string;
}

/** The request each kind sends; the third read in four is conditional (304). */
function requestFor(kind: Kind, t: Target, n: number) {
  const auth = { authorization: `Bearer ${t.token}` };
  switch (kind) {
    case 'read':
      return {
        method: 'GET' as const,
        path: `/api/orders/${t.orderId}`,
        headers: n % 4 === 2 ? { ...auth, 'if-none-match': t.etag } : auth,
      };
    case 'create':
      return {
        method: 'POST' as const,
        path: '/api/orders',
        headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ CustomerId: randomUUID(), Total: 19.99, Currency: 'USD' }),
      };
    case 'list':
      return {
        method: 'GET' as const,
        path: n % 2 === 0 ? '/api/orders?limit=20' : '/api/events?limit=20',
        headers: auth,
      };
    case 'token':
      return {
        method: 'POST' as const,
        path: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: t.tokenForm,
      };
  }
}

/** Open-loop pacing: every tick sends each kind's share of its rate, unless too many are already in flight. */
function startLoad(target: Target): { stats: Record<Kind, KindStats>; stop(): Promise<void> } {
  const fresh = (): KindStats => ({ sent: 0, skipped: 0, statuses: {}, errors: 0, maxMs: 0, latencies: [] });
  const stats = { read: fresh(), create: fresh(), list: fresh(), token: fresh() };
  const inFlight = new Set<Promise<void>>();
  const perKind = Object.fromEntries((Object.keys(RATES) as Kind[]).map((k) => [k, 0])) as Record<Kind, number>;
  const owed = { ...perKind };
  const send = (kind: Kind): void => {
    const s = stats[kind];
    if (perKind[kind] >= MAX_IN_FLIGHT) {
      s.skipped++;
      return;
    }
    perKind[kind]++;
    const started = performance.now();
    const done = target.pool
      .request(requestFor(kind, target, s.sent++))
      .then(
        async (response) => {
          await response.body.dump();
          s.statuses[response.statusCode] = (s.statuses[response.statusCode] ?? 0) + 1;
        },
        () => void s.errors++,
      )
      .finally(() => {
        const ms = performance.now() - started;
        s.maxMs = Math.max(s.maxMs, ms);
        if (s.latencies.length < 200_000) s.latencies.push(ms);
        perKind[kind]--;
        inFlight.delete(done);
      });
    inFlight.add(done);
  };
  const timer = setInterval(() => {
    for (const kind of Object.keys(RATES) as Kind[]) {
      owed[kind] += (RATES[kind] * TICK_MS) / 1000;
      for (; owed[kind] >= 1; owed[kind]--) send(kind);
    }
  }, TICK_MS);
  return {
    stats,
    async stop() {
      clearInterval(timer);
      await Promise.allSettled([...inFlight]);
    },
  };
}

async function json(pool: Pool, options: Parameters<Pool['request']>[0]) {
  const response = await pool.request(options);
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'signet-soak-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // The metrics listener (METRICS_PORT, loopback by default) on a port of its own, not the default 9464 a
  // `signet serve` on this machine may hold.
  const metricsPort = await freePort();
  const databaseUrl = `sqlite:${join(dir, 'signet.db')}`;
  const client = await prepareDatabase(databaseUrl);
  const signet = startSignet(dir, {
    HOST: '127.0.0.1',
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'info',
    RATE_LIMIT_MAX: '100000000',
    WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY,
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOWED_NETWORKS: 'loopback',
  });
  const receiver = await forkBenchChild<ReceiverMessage, ReceiverRequest>(
    join(here, '..', 'webhooks', 'webhooks-receiver.ts'),
    {},
    'receiver',
  );
  const pool = new Pool(base, { connections: 4 * MAX_IN_FLIGHT });
  const metricsPool = new Pool(`http://127.0.0.1:${metricsPort}`, { connections: 1 });
  let load: ReturnType<typeof startLoad> | undefined;
  try {
    await waitReady(base, signet);
    const pid = signet.pid!;
    const tokenForm = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      scope: `${base}/api/.default`,
    }).toString();
    const issued = await json(pool, {
      method: 'POST',
      path: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: tokenForm,
    });
    if (issued.status !== 200) throw new Error(`token: ${issued.status} ${JSON.stringify(issued.body)}`);
    const token = issued.body.access_token as string;
    const auth = { authorization: `Bearer ${token}` };
    const endpoint = await json(pool, {
      method: 'POST',
      path: '/api/webhooks',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ Url: `${receiver.ready.url}/soak/0`, Events: ['order.created'], Description: 'soak' }),
    });
    if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${JSON.stringify(endpoint.body)}`);
    await receiver.request({ type: 'endpoints', endpoints: { '/soak/0': endpoint.body.Secret } }, 'endpoints-set');
    const order = await json(pool, {
      method: 'POST',
      path: '/api/orders',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ CustomerId: randomUUID(), Total: 5, Currency: 'EUR' }),
    });
    if (order.status !== 201) throw new Error(`order: ${order.status} ${JSON.stringify(order.body)}`);
    const read = await json(pool, { method: 'GET', path: `/api/orders/${order.body.Id}`, headers: auth });
    const target: Target = { pool, token, orderId: order.body.Id, etag: String(read.headers.etag), tokenForm };

    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    console.error(`soak: ${SECONDS} s against pid ${pid} (${base}), rates ${JSON.stringify(RATES)}/s; ${machine}`);
    const samples: Sample[] = [{ t: 0, rssMb: rssMb(pid) }];
    const startedAt = performance.now();
    const cpuAtStart = cpuMs(pid);
    load = startLoad(target);
    const snapshotAt = Math.min(120, SECONDS / 2);
    let snapshots = 0;
    while (performance.now() - startedAt < SECONDS * 1000) {
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_SECONDS * 1000));
      const t = Math.round((performance.now() - startedAt) / 100) / 10;
      samples.push({ t, rssMb: rssMb(pid), ...(await heapOf(metricsPool)) });
      if (HEAP_SNAPSHOTS && snapshots === 0 && t >= snapshotAt) snapshots += Number(signet.kill('SIGPWR'));
      if (samples.length % 12 === 0)
        console.error(
          `  ${t.toFixed(0).padStart(4)} s  RSS ${samples.at(-1)!.rssMb} MB  max ${Math.max(...samples.map((s) => s.rssMb))} MB  heap ${samples.at(-1)!.heapUsedMb}/${samples.at(-1)!.heapTotalMb} MB  external ${samples.at(-1)!.externalMb} MB`,
        );
    }
    await load.stop();
    const cpuSpentMs = cpuMs(pid) - cpuAtStart;
    if (HEAP_SNAPSHOTS) signet.kill('SIGPWR');
    // The deliveries of the last creates have a few seconds to arrive.
    let delivered: GroupStats | undefined;
    const created = load.stats.create.statuses['201'] ?? 0;
    for (let i = 0; i < 60; i++) {
      const stats = (await receiver.request({ type: 'stats' }, 'stats')) as Extract<ReceiverMessage, { type: 'stats' }>;
      delivered = stats.groups.soak;
      if ((delivered?.verified ?? 0) - (delivered?.duplicates ?? 0) >= created + 1) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const half = samples.filter((s) => s.t >= SECONDS / 2);
    const result = {
      date: new Date().toISOString(),
      machine,
      seconds: SECONDS,
      nodeFlags: process.env.SOAK_NODE_FLAGS ?? startScriptFlags(),
      rates: RATES,
      rss: {
        startMb: samples[0]!.rssMb,
        maxMb: Math.max(...samples.map((s) => s.rssMb)),
        endMb: samples.at(-1)!.rssMb,
        lastHalfSlopeMbPerMinute: slopeMbPerMinute(half),
        lastHalfMinMb: Math.min(...half.map((s) => s.rssMb)),
        lastHalfMaxMb: Math.max(...half.map((s) => s.rssMb)),
      },
      requests: Object.fromEntries(
        Object.entries(load.stats).map(([kind, s]) => [
          kind,
          {
            sent: s.sent,
            skipped: s.skipped,
            errors: s.errors,
            statuses: s.statuses,
            p50Ms: percentile(s.latencies, 50),
            p99Ms: percentile(s.latencies, 99),
            maxMs: Math.round(s.maxMs),
          },
        ]),
      ),
      /** The server's CPU time per request sent (deliveries included in its work), and its share of one core. */
      serverCpu: {
        usPerRequest: Math.round((cpuSpentMs * 1000) / Object.values(load.stats).reduce((n, s) => n + s.sent, 0)),
        coreShare: Math.round((cpuSpentMs / (SECONDS * 1000)) * 100) / 100,
      },
      deliveries: { created: created + 1, verified: delivered?.verified ?? 0, rejected: delivered?.rejected ?? 0 },
      heapSnapshots: HEAP_SNAPSHOTS ? dir : undefined,
      /** [seconds, RSS, heap used, heap total, external] in MB. */
      samples: samples.map((s) => [s.t, s.rssMb, s.heapUsedMb, s.heapTotalMb, s.externalMb]),
    };
    const failedRequests = Object.values(load.stats).reduce(
      (n, s) =>
        n + s.errors + Object.entries(s.statuses).reduce((m, [code, c]) => m + (Number(code) >= 400 ? c : 0), 0),
      0,
    );
    const ok =
      result.rss.maxMb < MAX_RSS_MB && !(result.rss.lastHalfSlopeMbPerMinute > MAX_SLOPE) && failedRequests === 0;
    const text = JSON.stringify({ ...result, failedRequests, ok }, null, 2);
    console.log(text);
    if (process.env.SOAK_OUT) writeFileSync(process.env.SOAK_OUT, text);
    return ok ? 0 : 1;
  } finally {
    await load?.stop();
    await pool.close();
    await metricsPool.close();
    await receiver.stop();
    signet.kill('SIGTERM');
    await new Promise((resolve) => (signet.exitCode === null ? signet.once('exit', resolve) : resolve(undefined)));
    if (!HEAP_SNAPSHOTS) rmSync(dir, { recursive: true, force: true });
  }
}

process.exit(await main());
