// Liveness (/healthz: the process serves requests) and readiness (/readyz: the database answers, every
// migration is applied and, with the built-in authorization server, its signing keys are loaded); neither
// needs a token, and readiness failures are 503 problems that name each dependency's state in `checks`.
// (A stalled or locked database: test/http/outage.test.ts; Redis: test/http/redis-outage.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest, migrationsAreCurrent } from '../../src/db/migrate.ts';
import { createTestDatabase, testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { expectStatus } from '../helpers/expect.ts';

function assertUnavailable(res: CallResult): void {
  assert.equal(res.status, 503, res.text);
  assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  assert.equal(res.json.status, 503);
  assert.match(res.json.instance, /^http:\/\/127\.0\.0\.1:\d+\/readyz$/, 'instance is absolute, like the links');
  for (const member of ['type', 'title', 'detail', 'requestId'])
    assert.equal(typeof res.json[member], 'string', member);
  assert.match(res.headers.get('retry-after') ?? '', /^\d+$/);
  assert.equal(res.headers.get('cache-control'), 'no-store');
}

for (const dialect of testDialects()) {
  describe(`health probes [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect);
    });
    after(() => server.close());

    test('/healthz is 200 without a token and is never cached', async () => {
      const res = await call(server.url, 'GET', '/healthz');
      expectStatus(res, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(res.text, '{"status":"ok"}', 'the body as before it was documented (and serialized by its schema)');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const head = await call(server.url, 'HEAD', '/healthz');
      expectStatus(head, 200);
      assert.equal(head.text, '');
    });

    test('/readyz is 200 with the database reachable and every migration applied', async () => {
      const res = await call(server.url, 'GET', '/readyz');
      assert.equal(res.status, 200, res.text);
      assert.equal(
        res.text,
        `{"status":"ready","database":"${dialect}","checks":{"database":"ok","migrations":"ok","signing_keys":"ok"}}`,
        'each dependency checked is named (the built-in authorization server is on by default)',
      );
      assert.equal(res.headers.get('cache-control'), 'no-store');
    });
  });

  describe(`readiness with pending migrations [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect);
    });
    after(() => server.close());

    test('/readyz is a 503 problem while a migration is not applied', async () => {
      expectStatus(await call(server.url, 'GET', '/readyz'), 200);
      await sql`delete from kysely_migration`.execute(server.app.database.db);
      const res = await call(server.url, 'GET', '/readyz');
      assertUnavailable(res);
      assert.match(res.json.detail, /migration/);
      assert.deepEqual(
        res.json.checks,
        { database: 'migrations-pending', migrations: 'pending', signing_keys: 'ok' },
        'names the failing dependency',
      );
      assert.equal((await call(server.url, 'GET', '/healthz')).status, 200, 'the process is still alive');
    });
  });

  test(`the migration check reads a never-migrated database as pending, not as unreachable [${dialect}]`, async () => {
    const database = await createTestDatabase(dialect);
    const handle = openDatabase(database.url);
    try {
      assert.equal(await migrationsAreCurrent(handle), false);
      await migrateToLatest(handle);
      assert.equal(await migrationsAreCurrent(handle), true);
    } finally {
      await handle.db.destroy();
      await database.drop();
    }
  });

  describe(`readiness without a database [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect);
    });
    after(() => server.close());

    test('/readyz is a 503 problem when the database is gone, while /healthz stays 200', async () => {
      expectStatus(await call(server.url, 'GET', '/readyz'), 200);
      await server.app.database.db.destroy();
      const res = await call(server.url, 'GET', '/readyz');
      assertUnavailable(res);
      assert.doesNotMatch(res.text, /select|sqlite|pool|kysely|destroy|Error:/i, 'no internals in the body');
      assert.deepEqual(
        res.json.checks,
        { database: 'unavailable', migrations: 'unknown', signing_keys: 'ok' },
        'names the failing dependency; the migrations cannot be read',
      );
      const live = await call(server.url, 'GET', '/healthz');
      expectStatus(live, 200);
    });
  });

  describe(`readiness with the built-in authorization server [${dialect}]`, () => {
    let server: AuthTestServer;
    before(async () => {
      server = await startAuthServer(dialect);
    });
    after(() => server.close());

    test('/readyz reports the signing keys as loaded', async () => {
      const res = await call(server.url, 'GET', '/readyz');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json.checks, { database: 'ok', migrations: 'ok', signing_keys: 'ok' }, res.text);
    });

    test('/readyz is a 503 naming signing_keys when the authorization server holds no keys; /healthz stays 200', async () => {
      const holder = server.app.authServer;
      assert.ok(holder, 'the built-in authorization server is on');
      const loaded = holder.keys;
      // The holder as it would be with an empty key store: no key for the algorithms it signs with.
      Object.defineProperty(holder, 'keys', { configurable: true, get: () => ({ ...loaded, jwks: { keys: [] } }) });
      try {
        const res = await call(server.url, 'GET', '/readyz');
        assertUnavailable(res);
        assert.deepEqual(res.json.checks, { database: 'ok', migrations: 'ok', signing_keys: 'missing' }, res.text);
        assert.match(res.json.detail, /signing keys/);
        expectStatus(await call(server.url, 'GET', '/healthz'), 200);
      } finally {
        delete (holder as unknown as Record<string, unknown>).keys;
      }
      expectStatus(await call(server.url, 'GET', '/readyz'), 200);
    });
  });
}
