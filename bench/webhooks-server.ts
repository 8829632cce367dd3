// Signet process for the webhooks benchmark: one or more real Signet apps (HTTP API on 127.0.0.1:0, each
// over a fresh database) configured to deliver webhooks to a local receiver, in a process of their own so
// the load generator and the receiver never share their event loop.
//
// Started by bench/webhooks.ts through fork() (IPC, bench/child-control.ts's messages), or by hand:
//   BENCH_JWKS_FILE=/path/jwks.json npx node bench/webhooks-server.ts   (one SQLite instance; prints its port)
// Environment:
//   BENCH_JWKS_FILE           local JWKS the apps trust (bench/tokens.ts)
//   BENCH_WEBHOOK_INSTANCES   JSON [{ "name": "sqlite", "dialect": "sqlite"|"postgres", "dispatcher": true, "env": {…} }]
//   BENCH_POSTGRES_URL        PostgreSQL server for "postgres" instances (a fresh schema per instance)
//   BENCH_PROFILE_DIR, BENCH_HEAP_PROFILE   as for bench/server.ts
//
// An instance with "dispatcher": false is `signet serve` with WEBHOOK_DISPATCHER=false: its orders queue
// their deliveries in the outbox and nothing sends them until the parent asks for
//   { type: 'start-dispatcher', instance }  → { type: 'dispatcher-started' }
// which starts, in this process, what `signet dispatcher` runs (createWebhookRuntime with its own
// database connection or pool) on the same database: the backlog-drain scenario.
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig, type Config } from '../src/config/config.ts';
import { openDatabase, type DatabaseHandle } from '../src/db/database.ts';
import { createWebhookRuntime, type WebhookRuntime } from '../src/webhooks/runtime.ts';
import { TEST_WEBHOOK_SECRET_KEY, createTestDatabase, type TestDatabase, type TestDialect } from '../test/helpers/databases.ts';
import { BENCH_ISSUER, BENCH_RESOURCE } from './tokens.ts';
import { sendToParent, serveChildControl, type ControlReply } from './child-control.ts';

export interface WebhookInstanceSpec {
  name: string;
  dialect: TestDialect;
  /** false: WEBHOOK_DISPATCHER=false until `start-dispatcher`. */
  dispatcher: boolean;
  env?: Record<string, string>;
}

export type WebhookServerRequest = { type: 'start-dispatcher'; instance: string };
export type WebhookServerMessage = ControlReply | { type: 'ready'; instances: Record<string, number> } | { type: 'dispatcher-started' };

/** What the benchmark changes from the defaults: callbacks to a loopback receiver over plain http. */
export const BENCH_WEBHOOK_ENV = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOWED_NETWORKS: 'loopback', WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY };

const jwksFile = process.env.BENCH_JWKS_FILE;
if (!jwksFile) {
  console.error('BENCH_JWKS_FILE is required');
  process.exit(2);
}
const specs: WebhookInstanceSpec[] = process.env.BENCH_WEBHOOK_INSTANCES ? JSON.parse(process.env.BENCH_WEBHOOK_INSTANCES) : [{ name: 'sqlite', dialect: 'sqlite', dispatcher: true }];

let requestCount = 0;
const apps: FastifyInstance[] = [];
const databases: TestDatabase[] = [];
const configs = new Map<string, Readonly<Config>>();
const dispatchers: { runtime: WebhookRuntime; handle: DatabaseHandle }[] = [];

async function startInstance(spec: WebhookInstanceSpec): Promise<number> {
  const database = await createTestDatabase(spec.dialect, process.env.BENCH_POSTGRES_URL);
  databases.push(database);
  const env = {
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: database.url,
    AUTH_ISSUER: BENCH_ISSUER,
    API_RESOURCE: BENCH_RESOURCE,
    AUTH_JWKS_FILE: jwksFile,
    RATE_LIMIT_MAX: '100000000',
    LOG_LEVEL: 'silent',
    ...BENCH_WEBHOOK_ENV,
    WEBHOOK_DISPATCHER: String(spec.dispatcher),
    ...spec.env,
  };
  const app = await buildApp(loadConfig(env));
  apps.push(app);
  // The standalone dispatcher's configuration: the same, dispatching.
  configs.set(spec.name, loadConfig({ ...env, WEBHOOK_DISPATCHER: 'true' }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  app.server.on('request', () => requestCount++);
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

/** What `signet dispatcher` does (src/cli/dispatcher.ts), minus signal handling: its own connection, then start. */
function startDispatcher(instance: string): void {
  const config = configs.get(instance);
  if (!config) throw new Error(`no instance "${instance}"`);
  const handle = openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  const runtime = createWebhookRuntime(config, handle, pino({ level: 'silent' }), { dispatch: true });
  dispatchers.push({ runtime, handle });
  runtime.start();
}

async function shutdown(code: number): Promise<never> {
  for (const { runtime, handle } of dispatchers) {
    await runtime.stop(1000).catch(() => undefined);
    await handle.db.destroy().catch(() => undefined);
  }
  for (const app of apps) await app.close().catch(() => undefined);
  for (const db of databases) await db.drop().catch((err) => console.error(`could not drop a benchmark database: ${(err as Error).message}`));
  process.exit(code);
}

serveChildControl({ requestCount: () => requestCount, shutdown });
process.on('SIGINT', () => void shutdown(130));
process.on('SIGTERM', () => void shutdown(143));
process.on('message', (message: WebhookServerRequest) => {
  if (message.type !== 'start-dispatcher') return;
  try {
    startDispatcher(message.instance);
    sendToParent({ type: 'dispatcher-started' } satisfies WebhookServerMessage);
  } catch (err) {
    sendToParent({ type: 'error', message: (err as Error).stack ?? String(err) });
  }
});

try {
  const instances: Record<string, number> = {};
  for (const spec of specs) instances[spec.name] = await startInstance(spec);
  sendToParent({ type: 'ready', instances } satisfies WebhookServerMessage);
} catch (err) {
  sendToParent({ type: 'error', message: (err as Error).stack ?? String(err) });
  await shutdown(1);
}
