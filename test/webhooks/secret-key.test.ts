// The key that seals webhook secrets, checked at start: a lost key file or a wrong WEBHOOK_SECRET_KEY
// stops `signet serve` and `signet dispatcher` with a message naming the way out, instead of starting
// with a new key under which every delivery stays pending forever. A database without sealed secrets
// still gets its key generated. buildApp and the real command, both dialects where they apply.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { SecretKeyError } from '../../src/webhooks/store/secrets.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { call } from '../helpers/http.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE, type TestIssuer } from '../helpers/tokens.ts';
import { LOCAL_WEBHOOKS_ENV, startReceiver, WEBHOOK_SCOPES, type TestReceiver } from '../helpers/webhook-receiver.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const KEY_A = Buffer.alloc(32, 0xa1).toString('base64url');
const KEY_B = Buffer.alloc(32, 0xb2).toString('base64url');

interface Running {
  app: FastifyInstance;
  url: string;
}

let issuer: TestIssuer;

function configFor(databaseUrl: string, env: Record<string, string>) {
  return loadConfig({
    PORT: '0',
    DATABASE_URL: databaseUrl,
    AUTH_ISSUER: TEST_ISSUER,
    API_RESOURCE: TEST_RESOURCE,
    AUTH_JWKS_FILE: issuer.jwksFile,
    LOG_LEVEL: 'silent',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    METRICS_PORT: 'off',
    ...LOCAL_WEBHOOKS_ENV,
    ...env,
  });
}

async function start(databaseUrl: string, env: Record<string, string> = {}): Promise<Running> {
  const app = await buildApp(configFor(databaseUrl, env), { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  return { app, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

/** The start must fail with a SecretKeyError whose message passes `check`; a server that starts anyway is closed. */
async function assertRefused(
  databaseUrl: string,
  env: Record<string, string>,
  check: (message: string) => void,
): Promise<void> {
  let started: Running | undefined;
  try {
    started = await start(databaseUrl, env);
  } catch (err) {
    assert.ok(err instanceof SecretKeyError, `a SecretKeyError, got ${(err as Error).stack}`);
    check(err.message);
    return;
  }
  await started.app.close();
  assert.fail('the server started');
}

/** Starts, registers one endpoint (a secret is now sealed in the database), stops. */
async function withRegisteredEndpoint(
  databaseUrl: string,
  receiver: TestReceiver,
  env: Record<string, string> = {},
): Promise<{ id: string; secret: string }> {
  const running = await start(databaseUrl, env);
  try {
    const token = await issuer.clientToken(WEBHOOK_SCOPES);
    const created = await call(running.url, 'POST', '/api/webhooks', {
      token,
      body: { Url: `${receiver.url}/hook`, Events: ['*'] },
    });
    assert.equal(created.status, 201, created.text);
    return { id: String(created.json.Id), secret: String(created.json.Secret) };
  } finally {
    await running.app.close();
  }
}

/** `signet <command>` as a child process over the database; it must exit on its own within the deadline. */
function runCommand(command: 'serve' | 'dispatcher', databaseUrl: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BIN, command], {
    env: {
      ...process.env,
      PORT: '0',
      METRICS_PORT: 'off',
      LOG_LEVEL: 'silent',
      DATABASE_URL: databaseUrl,
      WEBHOOK_SECRET_KEY: '',
      // The issuer and audience the database was set up with (docs/operations/scaling-out.md, "Settings").
      AUTH_ISSUER: TEST_ISSUER,
      API_RESOURCE: TEST_RESOURCE,
      AUTH_JWKS_FILE: issuer.jwksFile,
      ...env,
    },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(result.error, undefined, `signet ${command} did not exit within 30 s; stderr:\n${result.stderr}`);
  return result;
}

/** Proves the stored secret is intact: a ping is delivered, signed with the secret registration returned. */
async function assertPingSignedWith(
  running: Running,
  receiver: TestReceiver,
  endpoint: { id: string; secret: string },
): Promise<void> {
  const token = await issuer.clientToken(WEBHOOK_SCOPES);
  const before = receiver.received.length;
  const ping = await call(running.url, 'POST', `/api/webhooks/${endpoint.id}/ping`, { token });
  assert.equal(ping.status, 202, ping.text);
  const [delivery] = (await receiver.waitFor(before + 1)).slice(before);
  const headers = delivery!.headers as Record<string, string>;
  new Webhook(endpoint.secret).verify(delivery!.body, {
    'webhook-id': headers['webhook-id']!,
    'webhook-timestamp': headers['webhook-timestamp']!,
    'webhook-signature': headers['webhook-signature']!,
  });
}

before(async () => {
  issuer = await createTestIssuer();
});

describe('webhook key file beside the SQLite database', () => {
  let receiver: TestReceiver;
  const databases: TestDatabase[] = [];
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    for (const database of databases) await database.drop();
  });

  async function sqliteDatabase(): Promise<{ url: string; keyFile: string }> {
    const database = await createTestDatabase('sqlite');
    databases.push(database);
    return { url: database.url, keyFile: `${database.url.slice('sqlite:'.length)}.webhook-key` };
  }

  test('a lost key file stops the start, naming the file and the way out, and no new key is generated; restoring it starts again with the secrets intact', async () => {
    const { url, keyFile } = await sqliteDatabase();
    const endpoint = await withRegisteredEndpoint(url, receiver);
    assert.ok(existsSync(keyFile), 'the first start generated the key file');
    const backup = `${keyFile}.backup`;
    copyFileSync(keyFile, backup);
    rmSync(keyFile);

    await assertRefused(url, {}, (message) => {
      assert.ok(message.includes(`the webhook key file ${keyFile} is missing`), message);
      assert.match(message, /restore the file/, message);
      assert.match(message, /WEBHOOK_SECRET_KEY/, message);
    });
    assert.equal(existsSync(keyFile), false, 'no new key was generated over the sealed secrets');

    copyFileSync(backup, keyFile);
    const restored = await start(url);
    try {
      await assertPingSignedWith(restored, receiver, endpoint);
    } finally {
      await restored.app.close();
    }
  });

  test('`signet serve` and `signet dispatcher` refuse to start with exit code 1 and the message on stderr', async () => {
    const { url, keyFile } = await sqliteDatabase();
    await withRegisteredEndpoint(url, receiver);
    rmSync(keyFile);
    for (const command of ['serve', 'dispatcher'] as const) {
      const result = runCommand(command, url);
      assert.equal(result.status, 1, `signet ${command}: exit ${result.status}; stderr:\n${result.stderr}`);
      assert.ok(
        result.stderr.includes(`signet: the webhook key file ${keyFile} is missing`),
        `signet ${command} stderr:\n${result.stderr}`,
      );
      assert.match(
        result.stderr,
        /restore the file from the backup of this database, or set WEBHOOK_SECRET_KEY/,
        result.stderr,
      );
      assert.doesNotMatch(result.stderr, /\n\s+at /, 'a message, not a stack trace');
      assert.equal(existsSync(keyFile), false, `signet ${command} generated no key`);
    }
  });

  test('a key file replaced by another valid key stops the start without changing the file', async () => {
    const { url, keyFile } = await sqliteDatabase();
    await withRegisteredEndpoint(url, receiver);
    writeFileSync(keyFile, `${KEY_B}\n`, { mode: 0o600 });
    await assertRefused(url, {}, (message) =>
      assert.ok(message.includes(`the webhook key file ${keyFile} does not open the webhook secrets`), message),
    );
    assert.equal(readFileSync(keyFile, 'utf8'), `${KEY_B}\n`);
  });

  test('a database without sealed secrets generates its key file (0600), also when an earlier one was removed', async () => {
    const { url, keyFile } = await sqliteDatabase();
    const first = await start(url);
    await first.app.close();
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    const firstKey = readFileSync(keyFile, 'utf8');
    rmSync(keyFile);
    const second = await start(url);
    try {
      assert.equal(statSync(keyFile).mode & 0o777, 0o600, 'a new key for a database that has nothing sealed');
      assert.notEqual(readFileSync(keyFile, 'utf8'), firstKey);
      const token = await issuer.clientToken(WEBHOOK_SCOPES);
      const created = await call(second.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: `${receiver.url}/fresh`, Events: ['*'] },
      });
      assert.equal(created.status, 201, created.text);
      await assertPingSignedWith(second, receiver, {
        id: String(created.json.Id),
        secret: String(created.json.Secret),
      });
    } finally {
      await second.app.close();
    }
  });
});

for (const dialect of testDialects()) {
  describe(`WEBHOOK_SECRET_KEY against the sealed secrets [${dialect}]`, () => {
    let receiver: TestReceiver;
    let database: TestDatabase;
    let endpoint: { id: string; secret: string };
    before(async () => {
      receiver = await startReceiver();
      database = await createTestDatabase(dialect);
      endpoint = await withRegisteredEndpoint(database.url, receiver, { WEBHOOK_SECRET_KEY: KEY_A });
    });
    after(async () => {
      await receiver.close();
      await database.drop();
    });

    test('a key that does not open the stored secrets stops the start; the right key starts and signs with the stored secret', async () => {
      await assertRefused(database.url, { WEBHOOK_SECRET_KEY: KEY_B }, (message) => {
        assert.match(
          message,
          /^WEBHOOK_SECRET_KEY does not open the webhook secrets stored in the database: set it to the key they were sealed with$/,
        );
      });
      const right = await start(database.url, { WEBHOOK_SECRET_KEY: KEY_A });
      try {
        await assertPingSignedWith(right, receiver, endpoint);
      } finally {
        await right.app.close();
      }
    });

    test('`signet dispatcher` with the wrong key exits 1 with the message on stderr', () => {
      const result = runCommand('dispatcher', database.url, { WEBHOOK_SECRET_KEY: KEY_B });
      assert.equal(result.status, 1, `exit ${result.status}; stderr:\n${result.stderr}`);
      assert.match(
        result.stderr,
        /signet: WEBHOOK_SECRET_KEY does not open the webhook secrets stored in the database/,
        result.stderr,
      );
    });
  });
}
