// Starts the real app on 127.0.0.1:0 over a fresh database (a copy of the migrated template), for tests that speak real HTTP.
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createMigratedTestDatabase } from './database-template.ts';
import { TEST_WEBHOOK_SECRET_KEY, type TestDialect } from './databases.ts';
import { withDeadline } from './deadline.ts';
import { checkResponsesAgainstDocument, type Conformance } from './openapi-conformance.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE, type TestIssuer } from './tokens.ts';

/**
 * Tests that block the event loop on purpose (spawnSync of a `signet` command next to an in-process
 * server) must not meet the overload guard; test/http/overload.test.ts turns it on for itself.
 */
export const NO_OVERLOAD_GUARD = { MAX_EVENT_LOOP_DELAY_MS: '0' };

/**
 * How long app.close() may take: it waits for requests in flight and the database pool, both done in
 * well under a second when nothing is stuck.
 */
export const APP_CLOSE_TIMEOUT_MS = 20_000;

/**
 * app.close() within APP_CLOSE_TIMEOUT_MS. Past it, every connection is destroyed so that the stuck
 * server does not keep the test process alive, and the wait fails saying what was still running.
 */
export async function closeApp(app: FastifyInstance, url: string): Promise<void> {
  try {
    await withDeadline(
      app.close(),
      APP_CLOSE_TIMEOUT_MS,
      () => `app.close() of ${url}: still closing (server listening: ${app.server.listening})`,
    );
  } catch (err) {
    app.server.closeAllConnections();
    throw err;
  }
}

/** Dropping a test database (a directory, or a PostgreSQL schema) within 20 s. */
export function dropWithin(database: { url: string; drop(): Promise<void> }): Promise<void> {
  return withDeadline(database.drop(), 20_000, () => `dropping the test database ${database.url}`);
}

/**
 * Test files run four at a time: each server's metrics listener takes a free loopback port, never the
 * default 9464 (app.metricsAddress() says which).
 */
export const TEST_METRICS_PORT = { METRICS_PORT: '0' };

/** http://host:port of the app's metrics listener, or undefined when it has none (METRICS_PORT=main or off). */
export function metricsUrlOf(app: FastifyInstance): string | undefined {
  const address = app.metricsAddress();
  if (!address) return undefined;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return `http://${host}:${address.port}`;
}

export interface TestServer {
  url: string;
  /** The metrics listener (METRICS_PORT=0 unless env says otherwise); undefined with METRICS_PORT=main or off. */
  metricsUrl: string | undefined;
  app: FastifyInstance;
  issuer: TestIssuer;
  dialect: TestDialect;
  /** The database URL, for a second connection of the test's own. */
  databaseUrl: string;
  /** Every response checked against /openapi.json (test/helpers/openapi-conformance.ts). */
  conformance: Conformance;
  /** Stops the app, drops the database, then fails if a response was not described by the document. */
  close(): Promise<void>;
}

/** `databaseUrl`: the URL the app connects with, made from its test database's (through a proxy, named). */
export interface StartOptions {
  databaseUrl?: (url: string) => string;
}

export async function startServer(
  dialect: TestDialect,
  env: Record<string, string> = {},
  issuer?: TestIssuer,
  options: StartOptions = {},
): Promise<TestServer> {
  const database = await createMigratedTestDatabase(dialect);
  const tokens = issuer ?? (await createTestIssuer());
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: options.databaseUrl ? options.databaseUrl(database.url) : database.url,
    AUTH_ISSUER: TEST_ISSUER,
    API_RESOURCE: TEST_RESOURCE,
    AUTH_JWKS_FILE: tokens.jwksFile,
    RATE_LIMIT_MAX: '100000',
    // The authorization server's endpoint limits are tested on their own (test/auth-server/endpoint-limits.test.ts).
    OAUTH_RATE_LIMIT_MAX: '100000',
    OAUTH_RATE_LIMIT_FAILURES: '100000',
    LOG_LEVEL: 'silent',
    WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
    ...TEST_METRICS_PORT,
    ...NO_OVERLOAD_GUARD,
    ...env,
  });
  const app = await buildApp(config, { logger: env.LOG_LEVEL !== undefined }).catch(async (err: unknown) => {
    await dropWithin(database);
    throw err;
  });
  const conformance = checkResponsesAgainstDocument(app);
  // A refused start (the metrics port taken) must not leave the app's pool or the database behind.
  await app.listen({ host: '127.0.0.1', port: 0 }).catch(async (err: unknown) => {
    await closeApp(app, 'a server that did not start');
    await dropWithin(database);
    throw err;
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    metricsUrl: metricsUrlOf(app),
    app,
    issuer: tokens,
    dialect,
    databaseUrl: database.url,
    conformance,
    close: async () => {
      await closeApp(app, url);
      await dropWithin(database);
      // After the cleanup, so a violation never leaks a server or a database; thrown from an
      // after() hook or a test's finally, it fails that suite or test.
      conformance.assertNone();
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
