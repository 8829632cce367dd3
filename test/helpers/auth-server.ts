// Starts the real app with its built-in authorization server (the default: the API trusts it) on a
// free 127.0.0.1 port (reserved until it listens), and creates users and clients through the same functions the CLI uses.
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyListenOptions } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { createClient, type NewClient } from '../../src/auth-server/clients/clients.repository.ts';
import { createUser } from '../../src/auth-server/identity/users.repository.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createMigratedTestDatabase } from './database-template.ts';
import { TEST_WEBHOOK_SECRET_KEY, type TestDialect } from './databases.ts';
import { closeWithin, listenOnLoopback, withDeadline } from './deadline.ts';
import { checkResponsesAgainstDocument, type Conformance } from './openapi-conformance.ts';
import { closeApp, dropWithin, metricsUrlOf, NO_OVERLOAD_GUARD, TEST_METRICS_PORT } from './server.ts';

export interface AuthTestServer {
  /** http://127.0.0.1:<port> */
  url: string;
  /** The metrics listener (METRICS_PORT=0 unless env says otherwise); undefined with METRICS_PORT=main or off. */
  metricsUrl: string | undefined;
  /** `${url}/oauth` */
  issuer: string;
  /** `${url}/api`, the `aud` of API access tokens */
  resource: string;
  app: FastifyInstance;
  dialect: TestDialect;
  /** Every response of the API checked against /openapi.json (test/helpers/openapi-conformance.ts). */
  conformance: Conformance;
  /** The database URL, for a second instance or a restart over the same data. */
  databaseUrl: string;
  createUser(
    input?: Partial<{ email: string; name: string; password: string }>,
  ): Promise<{ id: string; email: string; name: string; password: string }>;
  createClient(
    input?: Partial<NewClient>,
  ): Promise<{ clientId: string; clientSecret: string | undefined; redirectUri: string }>;
  /** Stops the app and keeps the database (for restart tests); fails on a response the document does not describe. */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A free port held until the app listens on it as well: the issuer must know its URL before the app
 * listens, and a port merely probed and closed could be taken in between by another test process (a
 * listener, or an outgoing connection's local port). Both sockets set SO_REUSEPORT (Node's `reusePort`,
 * Linux), which lets the app bind the port while the reservation still holds it; nothing connects to
 * the port before the app listens, so no connection lands on the reservation.
 */
async function reservePort(): Promise<{ port: number; release(): Promise<void> }> {
  const server = createServer();
  server.listen({ port: 0, host: '127.0.0.1', reusePort: true });
  await withDeadline(once(server, 'listening'), 10_000, 'reserving a port on 127.0.0.1');
  const { port } = server.address() as AddressInfo;
  return { port, release: () => closeWithin(server, `the reservation of port ${port}`) };
}

/** The OS picks a free port, for a server of another program that is told its port. */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listenOnLoopback(server);
  await closeWithin(server, `the probe listening on free port ${port}`);
  return port;
}

let counter = 0;

/** `logLines`: the app logs (at LOG_LEVEL, info unless env says) into this array, one parsed line each. */
export interface AuthServerOptions {
  logLines?: Record<string, unknown>[];
}

export async function startAuthServer(
  dialect: TestDialect,
  env: Record<string, string> = {},
  existing?: { databaseUrl: string; port: number },
  options: AuthServerOptions = {},
): Promise<AuthTestServer> {
  const database = existing ? undefined : await createMigratedTestDatabase(dialect);
  const databaseUrl = existing?.databaseUrl ?? database!.url;
  const reservation = existing ? undefined : await reservePort();
  const port = existing?.port ?? reservation!.port;
  let app: FastifyInstance | undefined;
  let conformance: Conformance;
  try {
    const config = loadConfig({
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: options.logLines ? 'info' : 'silent',
      RATE_LIMIT_MAX: '100000',
      // The authorization server's endpoint limits are tested on their own (test/auth-server/endpoint-limits.test.ts).
      OAUTH_RATE_LIMIT_MAX: '100000',
      OAUTH_RATE_LIMIT_FAILURES: '100000',
      WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
      ...TEST_METRICS_PORT,
      ...NO_OVERLOAD_GUARD,
      ...env,
    });
    const lines = options.logLines;
    app = await buildApp(
      config,
      lines ? { logStream: { write: (line) => void lines.push(JSON.parse(line)) } } : { logger: false },
    );
    conformance = checkResponsesAgainstDocument(app);
    // reusePort is passed through to net.Server.listen (Fastify forwards its listen options).
    await app.listen({ host: '127.0.0.1', port, reusePort: reservation !== undefined } as FastifyListenOptions);
  } catch (err) {
    // A built app that did not start (its metrics listener's port taken) still holds a pool.
    if (app) await closeApp(app, 'a server that did not start').catch(() => undefined);
    await reservation?.release();
    if (database) await dropWithin(database);
    throw err;
  }
  await reservation?.release();
  const url = `http://127.0.0.1:${port}`;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await closeApp(app, url);
    conformance.assertNone();
  };
  return {
    url,
    metricsUrl: metricsUrlOf(app),
    issuer: `${url}/oauth`,
    resource: `${url}/api`,
    app,
    dialect,
    conformance,
    databaseUrl,
    async createUser(input = {}) {
      counter += 1;
      const user = {
        email: `user${counter}-${Date.now()}@example.test`,
        name: `User ${counter}`,
        password: `correct horse ${counter}`,
        ...input,
      };
      const created = await createUser(app.database.db, user);
      return { id: created.id, email: created.email, name: created.name, password: user.password };
    },
    async createClient(input = {}) {
      const redirectUri = input.redirectUris?.[0] ?? 'http://127.0.0.1:9/callback';
      const { record, clientSecret } = await createClient(app.database.db, {
        name: 'Test app',
        type: 'confidential',
        grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
        redirectUris: [redirectUri],
        scopes: ['orders:read', 'orders:write'],
        corsOrigins: [],
        firstParty: false,
        ...input,
      });
      return { clientId: record.clientId, clientSecret, redirectUri };
    },
    stop,
    async close() {
      try {
        await stop();
      } finally {
        if (database) await dropWithin(database);
      }
    },
  };
}
