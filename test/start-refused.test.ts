// A start that is refused ends the process (docs/operations/failure-behaviour.md, "Start-up"): whatever
// dependencies are configured, `signet serve` prints the refusal and exits non-zero within seconds, so a
// supervisor sees the failure and restarts or alerts instead of watching a live process that serves
// nothing. Every case runs with Redis configured, whose connection would otherwise keep the process up.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { createTestDatabase, type TestDatabase } from './helpers/databases.ts';
import { closeWithin, exitOf, listenOnLoopback } from './helpers/deadline.ts';
import { call } from './helpers/http.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE, type TestIssuer } from './helpers/tokens.ts';
import { LOCAL_WEBHOOKS_ENV, WEBHOOK_SCOPES } from './helpers/webhook-receiver.ts';

const BIN = new URL('../bin/signet.js', import.meta.url).pathname;
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * A refused start must have ended by then. Start-up itself (compiling, opening the database) takes a
 * second or two on a loaded machine; a process kept alive by an open handle never ends, so only a hang
 * reaches this.
 */
const EXIT_DEADLINE_MS = 20_000;
const OTHER_KEY = Buffer.alloc(32, 0xb2).toString('base64url');

interface Refusal {
  code: number | null;
  stderr: string;
}

/** `signet serve` with REDIS_URL set and `env`; its exit code within the deadline, and what it printed. */
async function refusedServe(env: Record<string, string>): Promise<Refusal> {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', REDIS_URL, WEBHOOK_SECRET_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  try {
    const code = await exitOf(child, EXIT_DEADLINE_MS, () => `stderr:\n${stderr}\nstdout:\n${stdout}`);
    return { code, stderr };
  } finally {
    child.kill('SIGKILL'); // a no-op once it has exited
  }
}

function assertRefused(refusal: Refusal, message: RegExp): void {
  assert.ok(refusal.code !== null && refusal.code !== 0, `exit code ${refusal.code}; stderr:\n${refusal.stderr}`);
  assert.match(refusal.stderr, message, refusal.stderr);
}

describe('a refused start ends the process, with Redis configured', () => {
  let issuer: TestIssuer;
  let database: TestDatabase;
  let keyFile: string;

  before(async () => {
    issuer = await createTestIssuer();
    // A SQLite database holding a sealed webhook secret: its key file is what the refusals below are about.
    database = await createTestDatabase('sqlite');
    keyFile = `${database.url.slice('sqlite:'.length)}.webhook-key`;
    const config = loadConfig({
      PORT: '0',
      DATABASE_URL: database.url,
      AUTH_ISSUER: TEST_ISSUER,
      API_RESOURCE: TEST_RESOURCE,
      AUTH_JWKS_FILE: issuer.jwksFile,
      LOG_LEVEL: 'silent',
      ...LOCAL_WEBHOOKS_ENV,
    });
    const app = await buildApp(config, { logger: false });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const created = await call(url, 'POST', '/api/webhooks', {
        token: await issuer.clientToken(WEBHOOK_SCOPES),
        body: { Url: 'http://127.0.0.1:9/hook', Events: ['*'] },
      });
      assert.equal(created.status, 201, created.text);
    } finally {
      await app.close();
    }
  });
  after(() => database.drop());

  const serveOn = (env: Record<string, string> = {}) =>
    refusedServe({
      DATABASE_URL: database.url,
      AUTH_ISSUER: TEST_ISSUER,
      API_RESOURCE: TEST_RESOURCE,
      AUTH_JWKS_FILE: issuer.jwksFile,
      ...env,
    });

  test('the webhook key file missing beside a database with sealed secrets', async () => {
    const key = readFileSync(keyFile);
    rmSync(keyFile);
    try {
      assertRefused(await serveOn(), /the webhook key file .* is missing/);
    } finally {
      writeFileSync(keyFile, key, { mode: 0o600 });
    }
  });

  test('a WEBHOOK_SECRET_KEY that does not open the sealed secrets', async () => {
    assertRefused(await serveOn({ WEBHOOK_SECRET_KEY: OTHER_KEY }), /WEBHOOK_SECRET_KEY does not open/);
  });

  test('a token issuer key file that cannot be read (AUTH_JWKS_FILE)', async () => {
    assertRefused(await serveOn({ AUTH_JWKS_FILE: `${keyFile}.no-such-jwks.json` }), /no-such-jwks/);
  });

  test('a configuration value that does not parse', async () => {
    assertRefused(await serveOn({ PORT: 'x' }), /invalid configuration: PORT/);
  });

  test('a PostgreSQL that refuses connections', async () => {
    const closed = createServer();
    const port = await listenOnLoopback(closed);
    await closeWithin(closed, 'the probe for a port nothing listens on');
    assertRefused(
      await serveOn({
        DATABASE_URL: `postgres://nobody@127.0.0.1:${port}/none`,
        WEBHOOK_SECRET_KEY: OTHER_KEY,
        DATABASE_CONNECT_TIMEOUT: '1s',
      }),
      /ECONNREFUSED/,
    );
  });

  test('an address already in use', async () => {
    const taken = createServer();
    const port = await listenOnLoopback(taken);
    try {
      assertRefused(await serveOn({ PORT: String(port) }), /cannot listen on .*already in use/);
    } finally {
      await closeWithin(taken, 'the server holding the port');
    }
  });
});
