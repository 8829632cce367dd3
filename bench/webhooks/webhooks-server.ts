// Signet process for the webhooks benchmark: one or more real Signet apps (HTTP API on 127.0.0.1:0, each
// over a fresh database) configured to deliver webhooks to a local receiver, in a process of their own so
// the load generator and the receiver never share their event loop.
//
// Started by bench/webhooks/webhooks.ts through fork() (IPC, bench/lib/child-control.ts's messages), or by hand:
//   BENCH_JWKS_FILE=/path/jwks.json npx node bench/webhooks/webhooks-server.ts   (one SQLite instance; prints its port)
// Environment:
//   BENCH_JWKS_FILE           local JWKS the apps trust (bench/api/tokens.ts)
//   BENCH_WEBHOOK_INSTANCES   JSON [{ "name": "sqlite", "dialect": "sqlite"|"postgres", "dispatcher": true, "env": {…} }]
//   BENCH_POSTGRES_URL        PostgreSQL server for "postgres" instances (a fresh schema per instance)
//   BENCH_PROFILE_DIR, BENCH_HEAP_PROFILE   as for bench/api/server.ts
//   BENCH_WEBHOOKS_SQL=1      count every SQL statement (node:sqlite and pg) with its time, per statement text;
//                             { type: 'sql-stats' } → { type: 'sql-stats', statements } returns and resets the counts
//
// An instance with "dispatcher": false is `signet serve` with WEBHOOK_DISPATCHER=false: its orders queue
// their deliveries in the outbox and nothing sends them until the parent asks for
//   { type: 'start-dispatcher', instance }  → { type: 'dispatcher-started' }
// which starts, in this process, what `signet dispatcher` runs (createWebhookRuntime with its own
// database connection or pool) on the same database: the backlog-drain scenario. After a scenario,
//   { type: 'stop-instance', instance }  → { type: 'instance-stopped', states: { pending: n, succeeded: n, … } }
// closes the app (and its dispatcher: attempts in flight finish and are recorded, nothing new is claimed)
// so that what is left of its outbox does not compete with the next scenario, and counts its deliveries.
import { DatabaseSync, StatementSync } from 'node:sqlite';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { pino } from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config/config.ts';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { createWebhookRuntime, type WebhookRuntime } from '../../src/webhooks/runtime.ts';
import type { DispatcherStats } from '../../src/webhooks/delivery/dispatcher.ts';
import {
  BENCH_WEBHOOK_SECRET_KEY,
  createBenchDatabase,
  type BenchDatabase,
  type BenchDialect,
} from '../lib/databases.ts';
import { benchServerEnv } from '../api/tokens.ts';
import { sendToParent, serveChildControl, type ControlReply } from '../lib/child-control.ts';

export interface WebhookInstanceSpec {
  name: string;
  dialect: BenchDialect;
  /** false: WEBHOOK_DISPATCHER=false until `start-dispatcher`. */
  dispatcher: boolean;
  env?: Record<string, string>;
}

export type WebhookServerRequest =
  { type: 'start-dispatcher'; instance: string } | { type: 'stop-instance'; instance: string } | { type: 'sql-stats' };
/** Statement text (whitespace collapsed, cut at 160 characters) → executions and total wall time. */
export type SqlStatements = Record<string, { count: number; ms: number }>;
export type WebhookServerMessage =
  | ControlReply
  | { type: 'ready'; instances: Record<string, number>; databases: Record<string, string> }
  | { type: 'dispatcher-started' }
  /** After the instance closed (attempts in flight finished and recorded): its deliveries by state. */
  | { type: 'instance-stopped'; states: Record<string, number>; dispatched: DispatcherStats | undefined }
  | { type: 'sql-stats'; statements: SqlStatements };

export const BENCH_WEBHOOK_ENV = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWED_NETWORKS: 'loopback',
  WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY,
};

const jwksFile = process.env.BENCH_JWKS_FILE;
if (!jwksFile) {
  console.error('BENCH_JWKS_FILE is required');
  process.exit(2);
}
const specs: WebhookInstanceSpec[] = process.env.BENCH_WEBHOOK_INSTANCES
  ? JSON.parse(process.env.BENCH_WEBHOOK_INSTANCES)
  : [{ name: 'sqlite', dialect: 'sqlite', dispatcher: true }];

let requestCount = 0;

let sqlStatements: SqlStatements = {};

function countSql(text: string, ms: number): void {
  const key = text.replace(/\s+/g, ' ').slice(0, 160);
  const entry = (sqlStatements[key] ??= { count: 0, ms: 0 });
  entry.count++;
  entry.ms += ms;
}

/** Diagnostic: wraps node:sqlite's statement methods and pg's Client#query to count what runs (all instances together). */
function instrumentSql(): void {
  const statement = StatementSync.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of ['all', 'run', 'get', 'iterate']) {
    const original = statement[method]!;
    statement[method] = function (this: StatementSync, ...args: unknown[]) {
      const started = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        countSql(this.sourceSQL, performance.now() - started);
      }
    };
  }
  // BEGIN, SAVEPOINT, RELEASE and the group's COMMIT (with its fsync) run through exec.
  const database = DatabaseSync.prototype as unknown as { exec: (sqlText: string) => void };
  const exec = database.exec;
  database.exec = function (this: DatabaseSync, sqlText: string) {
    const started = performance.now();
    try {
      exec.call(this, sqlText);
    } finally {
      countSql(`exec: ${sqlText}`, performance.now() - started);
    }
  };
  const client = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = client.query;
  client.query = function (this: pg.Client, ...args: unknown[]) {
    const started = performance.now();
    const text =
      typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string } | undefined)?.text ?? '?');
    const result = query.apply(this, args);
    if (result instanceof Promise) return result.finally(() => countSql(text, performance.now() - started));
    countSql(text, performance.now() - started);
    return result;
  };
}
if (process.env.BENCH_WEBHOOKS_SQL === '1') instrumentSql();

interface Running {
  app: FastifyInstance;
  database: BenchDatabase;
  /** The standalone dispatcher's configuration: the same, dispatching. */
  dispatcherConfig: Readonly<Config>;
  dispatcher?: { runtime: WebhookRuntime; handle: DatabaseHandle };
  stopped: boolean;
}

const running = new Map<string, Running>();

async function startInstance(spec: WebhookInstanceSpec): Promise<number> {
  const database = await createBenchDatabase(spec.dialect, process.env.BENCH_POSTGRES_URL);
  const env = {
    ...benchServerEnv(database.url, jwksFile!),
    ...BENCH_WEBHOOK_ENV,
    WEBHOOK_DISPATCHER: String(spec.dispatcher),
    ...spec.env,
  };
  let app: FastifyInstance;
  try {
    app = await buildApp(loadConfig(env));
  } catch (err) {
    await database.drop().catch(() => undefined);
    throw err;
  }
  running.set(spec.name, {
    app,
    database,
    dispatcherConfig: loadConfig({ ...env, WEBHOOK_DISPATCHER: 'true' }),
    stopped: false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  app.server.on('request', () => requestCount++);
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

function instance(name: string): Running {
  const found = running.get(name);
  if (!found) throw new Error(`no instance "${name}"`);
  return found;
}

/** What `signet dispatcher` does (src/cli/dispatcher.ts), minus signal handling: its own connection, then start. */
async function startDispatcher(name: string): Promise<void> {
  const target = instance(name);
  const config = target.dispatcherConfig;
  const handle = openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  target.dispatcher = {
    runtime: await createWebhookRuntime(config, handle, pino({ level: 'silent' }), { dispatch: true }),
    handle,
  };
  target.dispatcher.runtime.start();
}

async function stopInstance(target: Running, graceMs?: number): Promise<void> {
  if (target.stopped) return;
  target.stopped = true;
  if (target.dispatcher) {
    await target.dispatcher.runtime.stop(graceMs);
    await target.dispatcher.handle.db.destroy();
  }
  await target.app.close();
}

async function deliveryStates(target: Running): Promise<Record<string, number>> {
  const handle = openDatabase(target.dispatcherConfig.databaseUrl);
  try {
    const rows = await handle.db
      .selectFrom('webhook_deliveries')
      .select((eb) => ['state', eb.fn.countAll<number>().as('n')])
      .groupBy('state')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  } finally {
    await handle.db.destroy();
  }
}

async function shutdown(code: number): Promise<never> {
  for (const target of running.values()) {
    await stopInstance(target, 1000).catch(() => undefined);
    await target.database
      .drop()
      .catch((err) => console.error(`could not drop a benchmark database: ${(err as Error).message}`));
  }
  process.exit(code);
}

serveChildControl({ requestCount: () => requestCount, shutdown });
process.on('message', (message: WebhookServerRequest) => {
  const handle = async () => {
    if (message.type === 'start-dispatcher') {
      await startDispatcher(message.instance);
      sendToParent({ type: 'dispatcher-started' } satisfies WebhookServerMessage);
    } else if (message.type === 'stop-instance') {
      const target = instance(message.instance);
      const dispatcher = target.dispatcher?.runtime.dispatcher ?? target.app.webhooks.dispatcher;
      await stopInstance(target);
      const dispatched = dispatcher && { ...dispatcher.stats };
      sendToParent({
        type: 'instance-stopped',
        states: await deliveryStates(target),
        dispatched,
      } satisfies WebhookServerMessage);
    } else if (message.type === 'sql-stats') {
      sendToParent({ type: 'sql-stats', statements: sqlStatements } satisfies WebhookServerMessage);
      sqlStatements = {};
    }
  };
  handle().catch((err: Error) => sendToParent({ type: 'error', message: err.stack ?? err.message }));
});

try {
  const instances: Record<string, number> = {};
  for (const spec of specs) instances[spec.name] = await startInstance(spec);
  const databases = Object.fromEntries([...running].map(([name, r]) => [name, r.database.url]));
  sendToParent({ type: 'ready', instances, databases } satisfies WebhookServerMessage);
} catch (err) {
  sendToParent({ type: 'error', message: (err as Error).stack ?? String(err) });
  await shutdown(1);
}
