// Throughput benchmark: Signet against a bare Fastify route, on the same machine, in one run.
//
//   npm run bench                         10 s per scenario after a 2 s warm-up, 50 connections
//   npm run bench -- auth                 the authorization server instead (bench/auth/auth.ts): client-
//                                         credentials tokens/s per ACCESS_TOKEN_ALG and full login +
//                                         code-exchange flows/s, against the same bare route
//   npm run bench -- webhooks             webhook deliveries instead (bench/webhooks/webhooks.ts): orders → signed
//                                         deliveries verified at a local receiver, deliveries/s and
//                                         commit-to-receipt latency, against a bare undici POST loop
//   BENCH_SECONDS=3 npm run bench         quick run
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench   also on PostgreSQL
//   BENCH_PROFILE=1 npm run bench         also CPU-profile every measured window (bench/profiles/…),
//                                         then: npx node bench/lib/profile-summary.ts bench/profiles/<run>
//                                         (BENCH_HEAP_PROFILE=1 adds allocation sampling)
//   BENCH_SQLITE_TIMING=/tmp/sql npm run bench   also time each SQLite statement of every measured
//                                         window (/tmp/sql/<scenario>.sqlite.txt, bench/lib/sqlite-timing.ts)
//
// Other settings: BENCH_WARMUP_SECONDS (2), BENCH_CONNECTIONS (50), BENCH_PIPELINING (1),
// BENCH_SCENARIOS (comma list of scenario ids to run, e.g. "bare,sqlite:get"), BENCH_DOCS=0 (do not
// touch docs/benchmarks.md; the default unless the run is a full, unprofiled one). The auth suite's ids:
// auth:sqlite:cc, auth:sqlite:cc-eddsa, auth:sqlite:cc-rs256, auth:sqlite:flow, auth:postgres:cc,
// auth:postgres:flow, bare-end, and, only when named, auth:sqlite:flow-sync-normal (SQLITE_SYNCHRONOUS=NORMAL);
// BENCH_AUTH_FLOW_CONCURRENCY (12) flows at a time. The webhooks suite's ids: baseline, webhooks:sqlite:latency,
// webhooks:sqlite:live, webhooks:sqlite:backlog, the same for postgres, baseline-end; its own settings are
// listed in bench/webhooks/webhooks.ts.
//
// The servers run in a child process (bench/api/server.ts); autocannon runs here, so the load generator
// never shares the servers' event loop. The child reports its own CPU time per measured window, which
// gives a client-independent cost per request next to req/s.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type AutocannonRequest, type Result } from 'autocannon';
import type { InstanceSpec, ServerMessage } from './api/server.ts';
import { forkBenchChild, type ControlMessage } from './lib/child-control.ts';
import { createBenchIssuer, type BenchIssuer } from './api/tokens.ts';
import { finishRun, formatTable, machineInfo, updateDocs, type Row } from './lib/report.ts';
import { runAuthBench } from './auth/auth.ts';
import { runWebhooksBench } from './webhooks/webhooks.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);

const SECONDS = positive('BENCH_SECONDS', 10);
const WARMUP_SECONDS = positive('BENCH_WARMUP_SECONDS', Math.min(2, SECONDS), true);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 50);
const PIPELINING = positive('BENCH_PIPELINING', 1);
const ONLY = process.env.BENCH_SCENARIOS
  ? new Set(process.env.BENCH_SCENARIOS.split(',').map((s) => s.trim()))
  : undefined;
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL || undefined;
const PROFILE_DIR =
  process.env.BENCH_PROFILE === '1'
    ? join(here, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'))
    : undefined;
const WRITE_DOCS = process.env.BENCH_DOCS
  ? process.env.BENCH_DOCS === '1'
  : ONLY === undefined && PROFILE_DIR === undefined;
/**
 * `npm run bench` (or `-- api`): the resource API; `-- auth`: the authorization server; `-- webhooks`: webhook
 * deliveries.
 */
const SUITE = process.argv[2] ?? 'api';
if (SUITE !== 'api' && SUITE !== 'auth' && SUITE !== 'webhooks' && SUITE !== 'scale')
  throw new Error(`unknown benchmark suite "${SUITE}" (api, auth, webhooks or scale)`);
// `npm run bench -- scale`: cost as data grows (bench/scale/scale.ts, its settings there); never touches the docs.
if (SUITE === 'scale') process.exit(await (await import('./scale/scale.ts')).runScaleBench());

/** Throughput targets, as a fraction of the bare route's req/s. */
// Creates on PostgreSQL (round trips to another process) have a target of their own (docs/benchmarks.md).
export const TARGETS: Record<string, number> = { get: 0.5, 'get-304': 0.5, post: 0.25, 'postgres:post': 0.1 };

function positive(name: string, fallback: number, zeroOk = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!zeroOk && value === 0))
    throw new Error(`${name} must be a ${zeroOk ? 'non-negative' : 'positive'} number`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Server child process
// ---------------------------------------------------------------------------------------------

interface ServerProcess {
  bare: number;
  instances: Record<string, number>;
  request(message: ControlMessage, expect: ServerMessage['type']): Promise<ServerMessage>;
  stop(): Promise<void>;
}

async function startServers(jwksFile: string, specs: InstanceSpec[]): Promise<ServerProcess> {
  if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
  const child = await forkBenchChild<ServerMessage>(
    join(here, 'api', 'server.ts'),
    { BENCH_JWKS_FILE: jwksFile, BENCH_INSTANCES: JSON.stringify(specs), BENCH_PROFILE_DIR: PROFILE_DIR ?? '' },
    'server process',
    10_000,
  );
  return { bare: child.ready.bare, instances: child.ready.instances, request: child.request, stop: child.stop };
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

interface Scenario {
  id: string;
  /** Row label in the table. */
  label: string;
  dialect: string;
  /** Key into TARGETS. */
  kind: string;
  port: number;
  expectStatus: number;
  requests: AutocannonRequest[];
}

interface Seed {
  orderId: number;
  etag: string;
}

async function seed(port: number, writeToken: string): Promise<Seed> {
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${writeToken}` };
  const created = await fetch(`${base}/api/orders`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(orderBody()),
  });
  if (created.status !== 201)
    throw new Error(`seeding: POST /api/orders answered ${created.status}: ${await created.text()}`);
  const { Id: orderId } = (await created.json()) as { Id: number };
  const read = await fetch(`${base}/api/orders/${orderId}`, { headers: auth });
  const etag = read.headers.get('etag');
  await read.arrayBuffer();
  if (read.status !== 200 || !etag)
    throw new Error(`seeding: GET /api/orders/${orderId} answered ${read.status} (etag ${etag})`);
  const cached = await fetch(`${base}/api/orders/${orderId}`, { headers: { ...auth, 'if-none-match': etag } });
  await cached.arrayBuffer();
  if (cached.status !== 304) throw new Error(`seeding: conditional GET answered ${cached.status}, not 304`);
  return { orderId, etag };
}

function orderBody(): { CustomerId: string; Total: number; Currency: string } {
  return { CustomerId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', Total: 19.99, Currency: 'USD' };
}

async function scenariosFor(
  dialect: string,
  port: number,
  issuer: BenchIssuer,
  noCachePort: number | undefined,
): Promise<Scenario[]> {
  const scope = 'orders:read orders:write';
  const es256 = await issuer.token('ES256', scope);
  const rs256 = await issuer.token('RS256', scope);
  const { orderId, etag } = await seed(port, es256);
  const path = `/api/orders/${orderId}`;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const runId = Math.random().toString(36).slice(2, 10);
  let counter = 0;
  const list: Scenario[] = [
    {
      id: `${dialect}:get`,
      label: 'GET /api/orders/{id} (ES256)',
      dialect,
      kind: 'get',
      port,
      expectStatus: 200,
      requests: [{ method: 'GET', path, headers: bearer(es256) }],
    },
    {
      id: `${dialect}:get-rs256`,
      label: 'GET /api/orders/{id} (RS256)',
      dialect,
      kind: 'get-rs256',
      port,
      expectStatus: 200,
      requests: [{ method: 'GET', path, headers: bearer(rs256) }],
    },
    {
      id: `${dialect}:get-304`,
      label: 'GET … If-None-Match → 304',
      dialect,
      kind: 'get-304',
      port,
      expectStatus: 304,
      requests: [{ method: 'GET', path, headers: { ...bearer(es256), 'if-none-match': etag } }],
    },
    {
      id: `${dialect}:post`,
      label: 'POST /api/orders + Idempotency-Key',
      dialect,
      kind: 'post',
      port,
      expectStatus: 201,
      requests: [
        {
          method: 'POST',
          path: '/api/orders',
          headers: { ...bearer(es256), 'content-type': 'application/json' },
          body: JSON.stringify(orderBody()),
          // A fresh key per request: every POST creates an order (no replays).
          setupRequest: (request) => ({
            ...request,
            headers: { ...request.headers, 'idempotency-key': `bench-${runId}-${++counter}` },
          }),
        },
      ],
    },
    {
      id: `${dialect}:401`,
      label: 'GET without token → 401',
      dialect,
      kind: '401',
      port,
      expectStatus: 401,
      requests: [{ method: 'GET', path }],
    },
  ];
  if (noCachePort !== undefined) {
    const seeded = await seed(noCachePort, es256);
    const p = `/api/orders/${seeded.orderId}`;
    list.push(
      {
        id: `${dialect}:get-nocache`,
        label: 'GET, token cache off (ES256)',
        dialect,
        kind: 'get-nocache',
        port: noCachePort,
        expectStatus: 200,
        requests: [{ method: 'GET', path: p, headers: bearer(es256) }],
      },
      {
        id: `${dialect}:get-nocache-rs256`,
        label: 'GET, token cache off (RS256)',
        dialect,
        kind: 'get-nocache-rs256',
        port: noCachePort,
        expectStatus: 200,
        requests: [{ method: 'GET', path: p, headers: bearer(rs256) }],
      },
    );
  }
  return list;
}

function bareScenario(port: number, id: string, label: string): Scenario {
  return {
    id,
    label,
    dialect: '-',
    kind: 'bare',
    port,
    expectStatus: 200,
    requests: [{ method: 'GET', path: '/bare' }],
  };
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

function cannon(scenario: Scenario, seconds: number): Promise<Result> {
  return autocannon({
    url: `http://127.0.0.1:${scenario.port}`,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    duration: seconds,
    timeout: 10,
    requests: scenario.requests,
  });
}

async function measure(servers: ServerProcess, scenario: Scenario): Promise<Row> {
  process.stdout.write(`  ${scenario.id.padEnd(24)} `);
  if (WARMUP_SECONDS > 0) await cannon(scenario, WARMUP_SECONDS);
  await servers.request({ type: 'measure-start', label: scenario.id.replace(/[^a-z0-9-]+/gi, '_') }, 'measure-started');
  const result = await cannon(scenario, SECONDS);
  const server = (await servers.request(
    { type: 'measure-stop', label: scenario.id.replace(/[^a-z0-9-]+/gi, '_') },
    'measured',
  )) as Extract<ServerMessage, { type: 'measured' }>;
  const total = Object.values(result.statusCodeStats).reduce((n, s) => n + s.count, 0);
  const expected = result.statusCodeStats[String(scenario.expectStatus)]?.count ?? 0;
  const unexpected = total - expected + result.errors + result.timeouts;
  if (server.profile)
    writeFileSync(
      server.profile.replace(/\.cpuprofile$/, '.meta.json'),
      JSON.stringify({
        scenario: scenario.id,
        label: scenario.label,
        requests: server.requests,
        seconds: server.elapsedMs / 1000,
      }),
    );
  const row: Row = {
    id: scenario.id,
    label: scenario.label,
    dialect: scenario.dialect,
    kind: scenario.kind,
    expectStatus: scenario.expectStatus,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total,
    unexpected,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
    serverCpuUsPerRequest: server.requests > 0 ? (server.cpuUserUs + server.cpuSystemUs) / server.requests : NaN,
    serverElu: server.eventLoopUtilization,
  };
  // Storage bytes per request: what a write costs the disk, which no timing shows on a fast one.
  const written = server.requests > 0 ? server.storageWriteBytes / server.requests : NaN;
  const disk = written > 0 ? `  disk ${(written / 1024).toFixed(1)} KiB/req` : '';
  console.log(
    `${Math.round(row.rps).toString().padStart(7)} req/s  p99 ${row.p99.toFixed(1).padStart(6)} ms  server ${row.serverCpuUsPerRequest.toFixed(0).padStart(5)} µs CPU/req  ELU ${(row.serverElu * 100).toFixed(0)}%${disk}${unexpected > 0 ? `  !! ${unexpected} unexpected (${JSON.stringify(row.statusCodes)}, errors ${result.errors})` : ''}`,
  );
  return row;
}

// ---------------------------------------------------------------------------------------------
// `npm run bench -- auth`: the authorization server (bench/auth/auth.ts), against the same bare route.

if (SUITE === 'auth') {
  const jwks = await createBenchIssuer(); // bench/api/server.ts wants a JWKS file even when it runs the bare app alone
  const servers = await startServers(jwks.jwksFile, []);
  let code = 1;
  try {
    code = await runAuthBench({
      seconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      connections: CONNECTIONS,
      pipelining: PIPELINING,
      only: ONLY,
      postgresUrl: POSTGRES_URL,
      profileDir: PROFILE_DIR,
      writeDocs: WRITE_DOCS,
      docsFile: join(root, 'docs', 'benchmarks.md'),
      measureBare: (id, label) => measure(servers, bareScenario(servers.bare, id, label)),
    });
  } catch (err) {
    console.error(err);
  } finally {
    await servers.stop();
    jwks.cleanup();
  }
  process.exit(code);
}

// ---------------------------------------------------------------------------------------------
// `npm run bench -- webhooks`: webhook deliveries (bench/webhooks/webhooks.ts), with its own baseline (a bare
// undici POST loop to the same receiver); no bench/api/server.ts needed.

if (SUITE === 'webhooks') {
  let code = 1;
  try {
    code = await runWebhooksBench({
      seconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      only: ONLY,
      postgresUrl: POSTGRES_URL,
      profileDir: PROFILE_DIR,
      writeDocs: WRITE_DOCS,
      docsFile: join(root, 'docs', 'benchmarks.md'),
    });
  } catch (err) {
    console.error(err);
  }
  process.exit(code);
}

// ---------------------------------------------------------------------------------------------

const issuer = await createBenchIssuer();
const specs: InstanceSpec[] = [
  { name: 'sqlite', dialect: 'sqlite' },
  { name: 'sqlite-nocache', dialect: 'sqlite', env: { AUTH_TOKEN_CACHE_SIZE: '0' } },
  // Same app with SQLite's relaxed durability (survives process crashes, not power loss): what fsync costs a POST.
  { name: 'sqlite-normal', dialect: 'sqlite', env: { SQLITE_SYNCHRONOUS: 'NORMAL' } },
  // Same app without metrics (no request-duration hook, no process metrics): what the metrics cost a GET
  // (docs/reference/metrics.md; the authenticated GET may lose at most 5%).
  { name: 'sqlite-nometrics', dialect: 'sqlite', env: { METRICS_PORT: 'off' } },
];
if (POSTGRES_URL) specs.push({ name: 'postgres', dialect: 'postgres' });

const machine = machineInfo();
console.log(`Signet benchmark — ${machine.cpus} × ${machine.model}, ${machine.memory}, Node ${machine.node}`);
console.log(
  `${SECONDS} s per scenario after ${WARMUP_SECONDS} s warm-up, ${CONNECTIONS} connections, pipelining ${PIPELINING}${PROFILE_DIR ? `, profiling into ${PROFILE_DIR}` : ''}\n`,
);

const servers = await startServers(issuer.jwksFile, specs);
let exitCode: number;
try {
  const scenarios: Scenario[] = [bareScenario(servers.bare, 'bare', 'GET /bare (bare Fastify)')];
  scenarios.push(
    ...(await scenariosFor('sqlite', servers.instances.sqlite!, issuer, servers.instances['sqlite-nocache'])),
  );
  const relaxed = await scenariosFor('sqlite', servers.instances['sqlite-normal']!, issuer, undefined);
  scenarios.push(
    ...relaxed
      .filter((s) => s.kind === 'post')
      .map((s) => ({
        ...s,
        id: 'sqlite:post-sync-normal',
        label: 'POST + Idempotency-Key, SQLITE_SYNCHRONOUS=NORMAL',
      })),
  );
  const unmetered = await scenariosFor('sqlite', servers.instances['sqlite-nometrics']!, issuer, undefined);
  scenarios.push(
    ...unmetered
      .filter((s) => s.kind === 'get')
      .map((s) => ({ ...s, id: 'sqlite:get-nometrics', label: 'GET /api/orders/{id} (ES256), METRICS_PORT=off' })),
  );
  if (servers.instances.postgres !== undefined)
    scenarios.push(...(await scenariosFor('postgres', servers.instances.postgres, issuer, undefined)));
  scenarios.push(bareScenario(servers.bare, 'bare-end', 'GET /bare again (drift check)'));
  // Diagnostic only, when asked for by name: bare Fastify sending a response as large as Signet's GET.
  if (ONLY?.has('bare-sized'))
    scenarios.push({
      ...bareScenario(servers.bare, 'bare-sized', 'GET /bare-sized (bare, Signet-sized response)'),
      requests: [{ method: 'GET', path: '/bare-sized' }],
    });

  const rows: Row[] = [];
  for (const scenario of scenarios) {
    if (ONLY && !ONLY.has(scenario.id) && !(scenario.kind === 'bare' && scenario.id === 'bare')) continue;
    rows.push(await measure(servers, scenario));
  }
  const settings = {
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
  };
  console.log(`\n${formatTable(rows, TARGETS)}`);
  exitCode = finishRun({
    failed: rows.some((r) => r.unexpected > 0),
    failure: 'some responses had an unexpected status',
    docsFile: join(root, 'docs', 'benchmarks.md'),
    write: WRITE_DOCS
      ? (file) => updateDocs(file, { rows, targets: TARGETS, machine, settings, date: new Date() })
      : undefined,
    profileDir: PROFILE_DIR,
  });
} catch (err) {
  console.error(err);
  exitCode = 1;
} finally {
  await servers.stop();
  issuer.cleanup();
}
process.exit(exitCode);
