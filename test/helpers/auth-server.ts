// Starts the real app with its built-in authorization server (the default: the API trusts it) on a
// free 127.0.0.1 port, and creates users and clients through the same functions the CLI uses.
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { createClient, type NewClient } from '../../src/auth-server/clients/clients.repository.ts';
import { createUser } from '../../src/auth-server/identity/users.repository.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createTestDatabase, TEST_WEBHOOK_SECRET_KEY, type TestDialect } from './databases.ts';
import { closeWithin, listenOnLoopback } from './deadline.ts';
import { checkResponsesAgainstDocument, type Conformance } from './openapi-conformance.ts';
import { closeApp, dropWithin, NO_OVERLOAD_GUARD } from './server.ts';

export interface AuthTestServer {
  /** http://127.0.0.1:<port> */
  url: string;
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

/** The OS picks a free port; the issuer must know its URL before the server listens. */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listenOnLoopback(server);
  await closeWithin(server, `the probe listening on free port ${port}`);
  return port;
}

let counter = 0;

export async function startAuthServer(
  dialect: TestDialect,
  env: Record<string, string> = {},
  existing?: { databaseUrl: string; port: number },
): Promise<AuthTestServer> {
  const database = existing ? undefined : await createTestDatabase(dialect);
  const databaseUrl = existing?.databaseUrl ?? database!.url;
  const port = existing?.port ?? (await freePort());
  const config = loadConfig({
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: '100000',
    // The authorization server's endpoint limits are tested on their own (test/auth-server/endpoint-limits.test.ts).
    OAUTH_RATE_LIMIT_MAX: '100000',
    OAUTH_RATE_LIMIT_FAILURES: '100000',
    WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
    ...NO_OVERLOAD_GUARD,
    ...env,
  });
  const app = await buildApp(config, { logger: false });
  const conformance = checkResponsesAgainstDocument(app);
  await app.listen({ host: '127.0.0.1', port });
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
