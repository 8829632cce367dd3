// Starts the real app on 127.0.0.1:0 over a fresh database, for tests that speak real HTTP.
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createTestDatabase, TEST_WEBHOOK_SECRET_KEY, type TestDialect } from './databases.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE, type TestIssuer } from './tokens.ts';

/**
 * Tests that block the event loop on purpose (spawnSync of a `signet` command next to an in-process
 * server) must not meet the overload guard; test/http/overload.test.ts turns it on for itself.
 */
export const NO_OVERLOAD_GUARD = { MAX_EVENT_LOOP_DELAY_MS: '0' };

export interface TestServer {
  url: string;
  app: FastifyInstance;
  issuer: TestIssuer;
  dialect: TestDialect;
  close(): Promise<void>;
}

export async function startServer(
  dialect: TestDialect,
  env: Record<string, string> = {},
  issuer?: TestIssuer,
): Promise<TestServer> {
  const database = await createTestDatabase(dialect);
  const tokens = issuer ?? (await createTestIssuer());
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: database.url,
    AUTH_ISSUER: TEST_ISSUER,
    API_RESOURCE: TEST_RESOURCE,
    AUTH_JWKS_FILE: tokens.jwksFile,
    RATE_LIMIT_MAX: '100000',
    LOG_LEVEL: 'silent',
    WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
    ...NO_OVERLOAD_GUARD,
    ...env,
  });
  const app = await buildApp(config, { logger: env.LOG_LEVEL !== undefined }).catch(async (err: unknown) => {
    await database.drop();
    throw err;
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    issuer: tokens,
    dialect,
    close: async () => {
      await app.close();
      await database.drop();
    },
  };
}

/** A server plus a client-credentials token with both order scopes: the usual start of a suite. */
export async function startWithClientToken(
  dialect: TestDialect,
  env: Record<string, string> = {},
): Promise<{ server: TestServer; token: string }> {
  const server = await startServer(dialect, env);
  return { server, token: await server.issuer.clientToken('orders:read orders:write') };
}
