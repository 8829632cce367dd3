// Authorization-server benchmark (`npm run bench -- auth`), run from bench/run.ts, which supplies the
// bare-Fastify baseline (bench/api/server.ts, measured first and last in the same run):
//
// - client credentials: autocannon POSTs the form of docs/guides/signing-in-users.md to /oauth/token
//   (grant_type=client_credentials, client_id, client_secret, scope=<resource>/.default), once per
//   ACCESS_TOKEN_ALG (ES256, the default, EdDSA, RS256), every response checked for 200;
// - the full browser flow: BENCH_AUTH_FLOW_CONCURRENCY (12) flows at a time, each one
//   GET /authorize → login page → POST login (argon2id) → consent page → POST consent → code →
//   POST /oauth/token (code + PKCE verifier + client secret), over raw HTTP with a cookie jar
//   (bench/lib/sign-in.ts), users taken in turn from 16 so that no row is shared.
//
// The servers run in bench/auth/auth-server.ts (a child process); the load is generated here. Besides the
// rate, the server process reports its CPU time per token/flow; this process's CPU time (the load
// generator's) is reported too: on a 2-core machine the two compete for the same cores.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { pkcePair, signIn } from '../lib/sign-in.ts';
import type { AuthInstance, AuthInstanceSpec, AuthServerMessage } from './auth-server.ts';
import { forkBenchChild, type ControlMessage } from '../lib/child-control.ts';
import type { Row } from '../lib/report.ts';
import { formatAuthTable, updateAuthDocs, type AuthRow } from './auth-report.ts';
import { finishRun, machineBusySeconds, machineInfo } from '../lib/report.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** Absolute targets on this project's 2-core machine, load generator included. */
export const AUTH_TARGETS: Record<string, { value: number; unit: string }> = {
  cc: { value: 1500, unit: 'tokens/s' },
  flow: { value: 40, unit: 'flows/s' },
};

export interface AuthBenchOptions {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  pipelining: number;
  only: Set<string> | undefined;
  postgresUrl: string | undefined;
  profileDir: string | undefined;
  writeDocs: boolean;
  docsFile: string;
  /** Measures the bare Fastify route of bench/api/server.ts (ids "bare" and "bare-end"). */
  measureBare(id: string, label: string): Promise<Row>;
}

const FLOW_CONCURRENCY = Number(process.env.BENCH_AUTH_FLOW_CONCURRENCY || 12);
const ALGORITHMS = ['ES256', 'EdDSA', 'RS256'] as const;

// ---------------------------------------------------------------------------------------------
// Server child process
// ---------------------------------------------------------------------------------------------

interface AuthServerProcess {
  instances: Record<string, AuthInstance>;
  request(message: ControlMessage, expect: AuthServerMessage['type']): Promise<AuthServerMessage>;
  stop(): Promise<void>;
}

async function startAuthServers(specs: AuthInstanceSpec[], options: AuthBenchOptions): Promise<AuthServerProcess> {
  const child = await forkBenchChild<AuthServerMessage>(
    join(here, 'auth-server.ts'),
    {
      BENCH_AUTH_INSTANCES: JSON.stringify(specs),
      BENCH_POSTGRES_URL: options.postgresUrl ?? '',
      BENCH_PROFILE_DIR: options.profileDir ?? '',
    },
    'auth server process',
  );
  return { instances: child.ready.instances, request: child.request, stop: child.stop };
}

// ---------------------------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------------------------

function jwtHeader(token: unknown): Record<string, unknown> {
  return JSON.parse(Buffer.from(String(token).split('.')[0] ?? '', 'base64url').toString()) as Record<string, unknown>;
}

function clientCredentialsForm(instance: AuthInstance): string {
  return new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: instance.machine.clientId,
    client_secret: instance.machine.clientSecret,
    scope: `${instance.resource}/.default`,
  }).toString();
}

/** One request by hand before the load: the token is what the scenario claims (alg, audience, scopes). */
async function checkClientCredentials(instance: AuthInstance, alg: string): Promise<void> {
  const response = await fetch(`${instance.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: clientCredentialsForm(instance),
  });
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200)
    throw new Error(`client credentials answered ${response.status}: ${JSON.stringify(body)}`);
  const header = jwtHeader(body.access_token);
  const payload = JSON.parse(
    Buffer.from(String(body.access_token).split('.')[1] ?? '', 'base64url').toString(),
  ) as Record<string, unknown>;
  if (header.alg !== alg || payload.aud !== instance.resource || body.scope !== 'orders:read orders:write') {
    throw new Error(
      `unexpected client-credentials token: header ${JSON.stringify(header)}, aud ${String(payload.aud)}, scope ${String(body.scope)}`,
    );
  }
}

interface LoadResult {
  ops: number;
  rate: number;
  p50: number;
  p99: number;
  unexpected: number;
  statusCodes: Record<string, number>;
  detail?: string;
}

async function clientCredentialsLoad(
  instance: AuthInstance,
  seconds: number,
  options: AuthBenchOptions,
): Promise<LoadResult> {
  const result = await autocannon({
    url: instance.url,
    connections: options.connections,
    pipelining: options.pipelining,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        method: 'POST',
        path: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: clientCredentialsForm(instance),
      },
    ],
  });
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  const total = Object.values(statusCodes).reduce((n, c) => n + c, 0);
  const ok = statusCodes['200'] ?? 0;
  return {
    ops: total,
    rate: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    unexpected: total - ok + result.errors + result.timeouts,
    statusCodes,
    detail: `non2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts}`,
  };
}

/** One complete flow: authorization request, login, consent, code, code exchange. Throws on any deviation. */
async function oneFlow(instance: AuthInstance, user: { email: string; password: string }): Promise<void> {
  const { verifier, challenge } = pkcePair();
  const state = pkcePair().verifier.slice(0, 16);
  // The authorization request of docs/guides/signing-in-users.md (no redirect_uri: the client has exactly one; S256
  // implied) plus state.
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: instance.webApp.clientId,
    code_challenge: challenge,
    scope: 'openid profile email',
    state,
  });
  const { callback, pages } = await signIn({
    base: instance.url,
    authorizeQuery: query.toString(),
    email: user.email,
    password: user.password,
  });
  const code = callback.searchParams.get('code');
  if (!code || callback.searchParams.get('state') !== state || !callback.href.startsWith(instance.webApp.redirectUri))
    throw new Error(`unexpected callback ${callback.href}`);
  if (pages.length !== 2) throw new Error(`expected a login and a consent page, saw ${pages.length} pages`);
  // The code exchange of docs/guides/signing-in-users.md: code, code_verifier, client_id, client_secret (grant_type
  // implied).
  const response = await fetch(`${instance.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      code,
      code_verifier: verifier,
      client_id: instance.webApp.clientId,
      client_secret: instance.webApp.clientSecret,
    }).toString(),
  });
  const body = (await response.json()) as Record<string, unknown>;
  if (
    response.status !== 200 ||
    typeof body.access_token !== 'string' ||
    typeof body.id_token !== 'string' ||
    typeof body.refresh_token !== 'string'
  ) {
    throw new Error(`code exchange answered ${response.status}: ${JSON.stringify(body)}`);
  }
}

/** HTTP requests one flow makes: authorize, page, login POST, resume, page, consent POST, resume, token. */
const REQUESTS_PER_FLOW = 8;

async function flowLoad(instance: AuthInstance, seconds: number): Promise<LoadResult> {
  const deadline = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  const failures = new Map<string, number>();
  let next = 0;
  const worker = async () => {
    while (performance.now() < deadline) {
      const user = instance.users[next++ % instance.users.length]!;
      const started = performance.now();
      try {
        await oneFlow(instance, user);
        latencies.push(performance.now() - started);
      } catch (err) {
        const message = (err as Error).message.slice(0, 120);
        failures.set(message, (failures.get(message) ?? 0) + 1);
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: FLOW_CONCURRENCY }, worker));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  const failed = [...failures.values()].reduce((n, c) => n + c, 0);
  return {
    ops: latencies.length + failed,
    rate: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    unexpected: failed,
    statusCodes: { ok: latencies.length, ...Object.fromEntries(failures) },
    detail: failed > 0 ? JSON.stringify(Object.fromEntries(failures)) : undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

interface AuthScenario {
  id: string;
  label: string;
  dialect: string;
  alg: string;
  kind: 'cc' | 'flow';
  instance: string;
  /** Diagnostic: runs only when BENCH_SCENARIOS names it. */
  onlyWhenNamed?: boolean;
}

function bareRow(row: Row, otherCpuCores: number): AuthRow {
  return {
    id: row.id,
    label: row.label,
    dialect: '-',
    alg: '',
    kind: 'bare',
    unit: 'req/s',
    rate: row.rps,
    httpRps: row.rps,
    p50: row.p50,
    p99: row.p99,
    ops: row.total,
    unexpected: row.unexpected,
    statusCodes: row.statusCodes,
    serverCpuUsPerOp: row.serverCpuUsPerRequest,
    serverCpuCores: NaN,
    clientCpuCores: NaN,
    otherCpuCores,
    serverElu: row.serverElu,
  };
}

async function measure(
  servers: AuthServerProcess,
  scenario: AuthScenario,
  options: AuthBenchOptions,
): Promise<AuthRow> {
  process.stdout.write(`  ${scenario.id.padEnd(28)} `);
  const instance = servers.instances[scenario.instance]!;
  const load = (seconds: number) =>
    scenario.kind === 'cc' ? clientCredentialsLoad(instance, seconds, options) : flowLoad(instance, seconds);
  if (scenario.kind === 'cc') await checkClientCredentials(instance, scenario.alg);
  if (options.warmupSeconds > 0) await load(options.warmupSeconds);
  const label = scenario.id.replace(/[^a-z0-9-]+/gi, '_');
  await servers.request({ type: 'measure-start', label }, 'measure-started');
  const clientCpu = process.cpuUsage();
  const busyAtStart = machineBusySeconds();
  const startedAt = performance.now();
  const result = await load(options.seconds);
  const elapsedUs = (performance.now() - startedAt) * 1000;
  const busy = machineBusySeconds() - busyAtStart;
  const client = process.cpuUsage(clientCpu);
  const server = (await servers.request({ type: 'measure-stop', label }, 'measured')) as Extract<
    AuthServerMessage,
    { type: 'measured' }
  >;
  const serverCpuUs = server.cpuUserUs + server.cpuSystemUs;
  if (server.profile)
    writeFileSync(
      server.profile.replace(/\.cpuprofile$/, '.meta.json'),
      JSON.stringify({
        scenario: scenario.id,
        label: scenario.label,
        requests: server.requests,
        ops: result.ops,
        seconds: server.elapsedMs / 1000,
      }),
    );
  const row: AuthRow = {
    id: scenario.id,
    label: scenario.label,
    dialect: scenario.dialect,
    alg: scenario.alg,
    kind: scenario.kind,
    unit: AUTH_TARGETS[scenario.kind]!.unit,
    rate: result.rate,
    httpRps: server.requests / (server.elapsedMs / 1000),
    p50: result.p50,
    p99: result.p99,
    ops: result.ops,
    unexpected: result.unexpected,
    statusCodes: result.statusCodes,
    serverCpuUsPerOp: result.ops > 0 ? serverCpuUs / result.ops : NaN,
    serverCpuCores: serverCpuUs / (server.elapsedMs * 1000),
    clientCpuCores: (client.user + client.system) / elapsedUs,
    otherCpuCores: Math.max(
      0,
      busy / (elapsedUs / 1e6) - serverCpuUs / elapsedUs - (client.user + client.system) / elapsedUs,
    ),
    serverElu: server.eventLoopUtilization,
  };
  console.log(
    `${row.rate.toFixed(0).padStart(6)} ${row.unit}  p50 ${row.p50.toFixed(1).padStart(6)} ms  p99 ${row.p99.toFixed(1).padStart(6)} ms  server ${row.serverCpuUsPerOp.toFixed(0).padStart(6)} µs CPU/${scenario.kind === 'cc' ? 'token' : 'flow'}  ` +
      `server ${row.serverCpuCores.toFixed(2)} cores, client ${row.clientCpuCores.toFixed(2)} cores, other ${row.otherCpuCores.toFixed(2)} cores, ELU ${(row.serverElu * 100).toFixed(0)}%` +
      (row.unexpected > 0 ? `  !! ${row.unexpected} unexpected (${result.detail})` : ''),
  );
  return row;
}

/**
 * The bare route through run.ts's own machinery. Other processes' CPU is estimated over warm-up and
 * window together: machine busy time less this process (autocannon) and the server's window rate.
 */
async function measureBare(id: string, label: string, options: AuthBenchOptions): Promise<AuthRow> {
  const busyAtStart = machineBusySeconds();
  const clientCpu = process.cpuUsage();
  const startedAt = performance.now();
  const row = await options.measureBare(id, label);
  const seconds = (performance.now() - startedAt) / 1000;
  const client = process.cpuUsage(clientCpu);
  const serverCores = (row.serverCpuUsPerRequest * row.total) / 1e6 / options.seconds;
  const other =
    (machineBusySeconds() - busyAtStart) / seconds - (client.user + client.system) / 1e6 / seconds - serverCores;
  return bareRow(row, Math.max(0, other));
}

export async function runAuthBench(options: AuthBenchOptions): Promise<number> {
  const specs: AuthInstanceSpec[] = ALGORITHMS.map((alg) => ({
    name: `sqlite-${alg.toLowerCase()}`,
    dialect: 'sqlite',
    env: { ACCESS_TOKEN_ALG: alg },
  }));
  // Diagnostic: SQLite's relaxed durability, to show what the per-commit fsync costs a sign-in.
  specs.push({
    name: 'sqlite-es256-normal',
    dialect: 'sqlite',
    env: { ACCESS_TOKEN_ALG: 'ES256', SQLITE_SYNCHRONOUS: 'NORMAL' },
  });
  if (options.postgresUrl)
    specs.push({ name: 'postgres-es256', dialect: 'postgres', env: { ACCESS_TOKEN_ALG: 'ES256' } });
  const scenarios: AuthScenario[] = [
    ...ALGORITHMS.map((alg): AuthScenario => ({
      id: `auth:sqlite:cc${alg === 'ES256' ? '' : `-${alg.toLowerCase()}`}`,
      label: `client credentials, ${alg}${alg === 'ES256' ? ' (default)' : ''}`,
      dialect: 'sqlite',
      alg,
      kind: 'cc',
      instance: `sqlite-${alg.toLowerCase()}`,
    })),
    {
      id: 'auth:sqlite:flow',
      label: `login + consent + code exchange, ${FLOW_CONCURRENCY} concurrent`,
      dialect: 'sqlite',
      alg: 'ES256',
      kind: 'flow',
      instance: 'sqlite-es256',
    },
    {
      id: 'auth:sqlite:flow-sync-normal',
      label: `the same, SQLITE_SYNCHRONOUS=NORMAL`,
      dialect: 'sqlite',
      alg: 'ES256',
      kind: 'flow',
      instance: 'sqlite-es256-normal',
      onlyWhenNamed: true,
    },
  ];
  if (options.postgresUrl) {
    scenarios.push(
      {
        id: 'auth:postgres:cc',
        label: 'client credentials, ES256 (default)',
        dialect: 'postgres',
        alg: 'ES256',
        kind: 'cc',
        instance: 'postgres-es256',
      },
      {
        id: 'auth:postgres:flow',
        label: `login + consent + code exchange, ${FLOW_CONCURRENCY} concurrent`,
        dialect: 'postgres',
        alg: 'ES256',
        kind: 'flow',
        instance: 'postgres-es256',
      },
    );
  }
  const wanted = (scenario: AuthScenario) => (options.only ? options.only.has(scenario.id) : !scenario.onlyWhenNamed);
  const needed = new Set(scenarios.filter(wanted).map((s) => s.instance));
  const machine = machineInfo();
  console.log(
    `Signet authorization-server benchmark — ${machine.cpus} × ${machine.model}, ${machine.memory}, Node ${machine.node}`,
  );
  console.log(
    `${options.seconds} s per scenario after ${options.warmupSeconds} s warm-up; client credentials: autocannon, ${options.connections} connections, pipelining ${options.pipelining}; flows: ${FLOW_CONCURRENCY} at a time${options.profileDir ? `; profiling into ${options.profileDir}` : ''}\n`,
  );

  const servers = await startAuthServers(
    specs.filter((s) => needed.has(s.name)),
    options,
  );
  let exitCode: number;
  try {
    const rows: AuthRow[] = [await measureBare('bare', 'GET /bare (bare Fastify)', options)];
    for (const scenario of scenarios) if (wanted(scenario)) rows.push(await measure(servers, scenario, options));
    if (!options.only || options.only.has('bare-end'))
      rows.push(await measureBare('bare-end', 'GET /bare again (drift check)', options));
    console.log(`\n${formatAuthTable(rows, AUTH_TARGETS)}`);
    const settings = {
      seconds: options.seconds,
      warmupSeconds: options.warmupSeconds,
      connections: options.connections,
      pipelining: options.pipelining,
      flowConcurrency: FLOW_CONCURRENCY,
      requestsPerFlow: REQUESTS_PER_FLOW,
    };
    exitCode = finishRun({
      failed: rows.some((r) => r.unexpected > 0),
      failure: 'some requests or flows failed',
      docsFile: options.docsFile,
      write: options.writeDocs
        ? (file) => updateAuthDocs(file, { rows, targets: AUTH_TARGETS, machine, settings, date: new Date() })
        : undefined,
      profileDir: options.profileDir,
    });
  } catch (err) {
    console.error(err);
    exitCode = 1;
  } finally {
    await servers.stop();
  }
  return exitCode;
}
