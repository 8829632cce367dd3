// Benchmark server process: a bare Fastify app (the baseline) and one or more real Signet apps, all on
// 127.0.0.1:0, in a process of their own so the load generator never shares their event loop.
//
// Started by bench/run.ts through fork() (IPC channel), or by hand:
//   BENCH_JWKS_FILE=/path/jwks.json npx node bench/api/server.ts      (prints the ports as one JSON line)
// Environment:
//   BENCH_JWKS_FILE     local JWKS the Signet apps trust (required)
//   BENCH_INSTANCES     JSON [{ "name": "sqlite", "dialect": "sqlite"|"postgres", "env": {…} }], default one SQLite app
//   BENCH_POSTGRES_URL  PostgreSQL server for "postgres" instances (a fresh schema per instance)
//   BENCH_PROFILE_DIR   when set, every measured window is CPU-profiled into <dir>/<label>.cpuprofile
//   BENCH_HEAP_PROFILE  with BENCH_PROFILE_DIR, =1 also samples allocations (<label>.heapprofile, objects
//                       collected by GC included), to see who produces the garbage
import Fastify, { type FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createBenchDatabase, type BenchDatabase, type BenchDialect } from '../lib/databases.ts';
import { benchServerEnv } from './tokens.ts';
import {
  closeAppsAndDrop,
  sendToParent,
  serveChildControl,
  type ControlMessage,
  type ControlReply,
} from '../lib/child-control.ts';

export interface InstanceSpec {
  name: string;
  dialect: BenchDialect;
  env?: Record<string, string>;
}

export type ServerMessage = { type: 'ready'; bare: number; instances: Record<string, number> } | ControlReply;
export type { ControlMessage };

const jwksFile = process.env.BENCH_JWKS_FILE;
if (!jwksFile) {
  console.error('BENCH_JWKS_FILE is required');
  process.exit(2);
}
const specs: InstanceSpec[] = process.env.BENCH_INSTANCES
  ? JSON.parse(process.env.BENCH_INSTANCES)
  : [{ name: 'sqlite', dialect: 'sqlite' }];

const SIZED_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self';base-uri 'none';font-src 'self' https: data:;form-action 'self';frame-ancestors 'none';img-src 'self' data:;object-src 'none';script-src 'self';script-src-attr 'none';style-src 'self' 'unsafe-inline'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
  'x-request-id': '6efc2cec-9da9-4b1f-a867-4cd379dc8a9a',
  etag: '"1.1.1qkTWfugBq"',
  'cache-control': 'private, no-cache',
  vary: 'Authorization, Origin',
  'content-type': 'application/json; charset=utf-8',
  'last-modified': 'Sat, 21 Nov 2026 21:15:38 GMT',
  'ratelimit-policy': '"default";q=100000000;w=60',
  ratelimit: '"default";r=99999998;t=60',
};
const SIZED_BODY = JSON.stringify({
  Id: 1,
  CustomerId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
  Total: 19.99,
  Currency: 'USD',
  Status: 'pending',
  CreatedAtUtc: '2026-11-21T21:15:38.513Z',
  UpdatedAtUtc: '2026-11-21T21:15:38.513Z',
  _links: Object.fromEntries(
    ['self', 'pay', 'cancel', 'update', 'delete'].map((k) => [
      k,
      {
        href: `http://127.0.0.1:46441/api/orders/1${k === 'pay' || k === 'cancel' ? `/${k}` : ''}`,
        method: k === 'self' ? 'GET' : k === 'update' ? 'PUT' : k === 'delete' ? 'DELETE' : 'POST',
      },
    ]),
  ),
});

let requestCount = 0;
const countRequests = (app: FastifyInstance) => app.server.on('request', () => requestCount++);

const apps: FastifyInstance[] = [];
const databases: BenchDatabase[] = [];

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  countRequests(app);
  apps.push(app);
  return address.port;
}

async function startBare(): Promise<number> {
  const app = Fastify();
  app.get('/bare', async () => ({ id: 1, status: 'ok', message: 'bare fastify baseline' }));
  // Diagnostic (scenario "bare-sized", only when asked for): no plugins or hooks, but a response of the
  // size and header count of Signet's GET /api/orders/{id}, to separate per-byte/per-header costs
  // (socket write, header validation) from framework and application work.
  app.get('/bare-sized', async (_request, reply) => reply.headers(SIZED_HEADERS).send(SIZED_BODY));
  return listen(app);
}

async function startSignet(spec: InstanceSpec): Promise<number> {
  const database = await createBenchDatabase(spec.dialect, process.env.BENCH_POSTGRES_URL);
  databases.push(database);
  const config = loadConfig({
    ...benchServerEnv(database.url, jwksFile!),
    ...spec.env,
  });
  return listen(await buildApp(config));
}

const shutdown = closeAppsAndDrop(apps, databases);

serveChildControl({ requestCount: () => requestCount, shutdown });

try {
  const bare = await startBare();
  const instances: Record<string, number> = {};
  for (const spec of specs) instances[spec.name] = await startSignet(spec);
  sendToParent({ type: 'ready', bare, instances } satisfies ServerMessage);
} catch (err) {
  sendToParent({ type: 'error', message: (err as Error).stack ?? String(err) });
  await shutdown(1);
}
