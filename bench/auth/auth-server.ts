// Authorization-server benchmark process: one or more real Signet apps with the built-in authorization
// server (/oauth), each over its own fresh database with benchmark users and clients, in a process of
// their own so the load generator (bench/run.ts → bench/auth/auth.ts) never shares their event loop.
//
// Started by bench/auth/auth.ts through fork() (IPC channel, same control messages as bench/api/server.ts), or by hand:
//   npx node bench/auth/auth-server.ts      (one SQLite instance; prints the instances as one JSON line)
// Environment:
//   BENCH_AUTH_INSTANCES  JSON [{ "name": "sqlite-es256", "dialect": "sqlite"|"postgres", "env": {…} }]
//   BENCH_POSTGRES_URL    PostgreSQL server for "postgres" instances: each gets a database of its own,
//                         created here and dropped on shutdown
//   BENCH_AUTH_USERS      users created per instance (default 16)
//   BENCH_PROFILE_DIR, BENCH_HEAP_PROFILE   as for bench/api/server.ts
//
// Unlike bench/api/server.ts (a foreign issuer and a JWKS file), the issuer here is the app itself, so its
// URL, and with it the port, must be known before the app is built: each instance gets a free port first.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { createClient } from '../../src/auth-server/clients/clients.repository.ts';
import { createUser } from '../../src/auth-server/identity/users.repository.ts';
import { loadConfig } from '../../src/config/config.ts';
import { BENCH_WEBHOOK_SECRET_KEY, createBenchDatabase, type BenchDatabase } from '../lib/databases.ts';
import { closeAppsAndDrop, sendToParent, serveChildControl, type ControlReply } from '../lib/child-control.ts';

export interface AuthInstanceSpec {
  name: string;
  dialect: 'sqlite' | 'postgres';
  env?: Record<string, string>;
}

export interface AuthInstance {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** `${url}/api`: the resource of `<resource>/.default` and the `aud` of the tokens. */
  resource: string;
  /** Confidential client allowed client_credentials on the API. */
  machine: { clientId: string; clientSecret: string };
  /** Confidential client for the code flow (authorization_code + refresh_token), PKCE required. */
  webApp: { clientId: string; clientSecret: string; redirectUri: string };
  users: { email: string; password: string }[];
}

export type AuthServerMessage = ControlReply | { type: 'ready'; instances: Record<string, AuthInstance> };

const REDIRECT_URI = 'http://127.0.0.1:9/callback'; // never contacted: the driver stops at the redirect
const specs: AuthInstanceSpec[] = process.env.BENCH_AUTH_INSTANCES
  ? JSON.parse(process.env.BENCH_AUTH_INSTANCES)
  : [{ name: 'sqlite', dialect: 'sqlite' }];
const userCount = Number(process.env.BENCH_AUTH_USERS || 16);

let requestCount = 0;
const apps: FastifyInstance[] = [];
const databases: BenchDatabase[] = [];

/** The OS picks a free port; the issuer must know its URL before the app is built. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no free port');
  return address.port;
}

/** A PostgreSQL database of its own (not a schema), so nothing of the run is left in the server's databases. */
async function createPostgresDatabase(base: string): Promise<BenchDatabase> {
  const name = `signet_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

async function startInstance(spec: AuthInstanceSpec): Promise<AuthInstance> {
  let database: BenchDatabase;
  if (spec.dialect === 'postgres') {
    const base = process.env.BENCH_POSTGRES_URL;
    if (!base) throw new Error('a "postgres" instance needs BENCH_POSTGRES_URL');
    database = await createPostgresDatabase(base);
  } else {
    database = await createBenchDatabase('sqlite');
  }
  databases.push(database);
  const port = await freePort();
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: database.url,
    RATE_LIMIT_MAX: '100000000',
    LOG_LEVEL: 'silent',
    WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY,
    METRICS_PORT: '0',
    ...spec.env,
  });
  const app = await buildApp(config, { logger: false });
  apps.push(app);
  const db = app.database.db;
  const url = `http://127.0.0.1:${port}`;

  const machine = await createClient(db, {
    name: 'Bench service',
    type: 'confidential',
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scopes: ['orders:read', 'orders:write'],
    corsOrigins: [],
    firstParty: false,
  });
  const webApp = await createClient(db, {
    name: 'Bench web app',
    type: 'confidential',
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: [REDIRECT_URI],
    scopes: ['orders:read', 'orders:write'],
    corsOrigins: [],
    firstParty: false,
  });
  const users: AuthInstance['users'] = [];
  const run = randomBytes(3).toString('hex');
  // argon2id hashes: a few at a time, the thread pool has 4 threads.
  for (let i = 0; i < userCount; i += 4) {
    await Promise.all(
      Array.from({ length: Math.min(4, userCount - i) }, async (_, j) => {
        const user = {
          email: `bench${i + j}-${run}@example.test`,
          name: `Bench User ${i + j}`,
          password: `correct horse battery ${i + j}`,
        };
        await createUser(db, user);
        users.push({ email: user.email, password: user.password });
      }),
    );
  }

  await app.listen({ host: '127.0.0.1', port });
  app.server.on('request', () => requestCount++);
  return {
    url,
    port,
    resource: `${url}/api`,
    machine: { clientId: machine.record.clientId, clientSecret: machine.clientSecret! },
    webApp: { clientId: webApp.record.clientId, clientSecret: webApp.clientSecret!, redirectUri: REDIRECT_URI },
    users,
  };
}

const shutdown = closeAppsAndDrop(apps, databases);

serveChildControl({ requestCount: () => requestCount, shutdown });

try {
  const instances: Record<string, AuthInstance> = {};
  for (const spec of specs) instances[spec.name] = await startInstance(spec);
  sendToParent({ type: 'ready', instances } satisfies AuthServerMessage);
} catch (err) {
  sendToParent({ type: 'error', message: (err as Error).stack ?? String(err) });
  await shutdown(1);
}
