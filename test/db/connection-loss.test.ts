// A PostgreSQL connection lost while idle in the pool (a database restart, a failover, an idle timeout
// on a proxy) or while checked out (mid-query, or inside a transaction between queries) must not end
// the process: node-postgres reports it as an 'error' event, which throws when nothing listens. The
// query it failed is an outage (503), and the pool replaces the connection. A database that stalls,
// runs a statement too long or holds a lock fails the query in bounded time. PostgreSQL only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createServer, type Socket } from 'node:net';
import pg from 'pg';
import { openDatabase, withoutTimeouts, type DatabaseHandle } from '../../src/db/database.ts';
import { isDatabaseOutage } from '../../src/http/problems/outage.ts';
import { openInbox } from '../../src/receiver/index.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { closeWithin, listenOnLoopback, waitUntil, withDeadline } from '../helpers/deadline.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';

/** Ends every server session of the given application_name, as an administrator or a failover would. */
async function terminate(applicationName: string): Promise<number> {
  const admin = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ pid: number }>(
      'select pg_terminate_backend(pid) as pid from pg_stat_activity where application_name = $1',
      [applicationName],
    );
    return rows.length;
  } finally {
    await admin.end();
  }
}

function named(url: string): { url: string; applicationName: string } {
  const applicationName = `signet-test-${randomBytes(6).toString('hex')}`;
  const withName = new URL(url);
  withName.searchParams.set('application_name', applicationName);
  return { url: withName.toString(), applicationName };
}

test('a PostgreSQL that accepts connections but never answers is an outage after the connect timeout, not a hang', async () => {
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => void sockets.add(socket)); // accepts, then says nothing
  const port = await listenOnLoopback(silent);
  const handle = openDatabase(`postgres://nobody@127.0.0.1:${port}/none`, {
    connectTimeoutMs: 200,
  });
  try {
    const failure = await withDeadline(
      sql`select 1`.execute(handle.db).then(
        () => undefined,
        (err: unknown) => err,
      ),
      20_000,
      'select 1 against a server that never answers (connect timeout 200 ms)',
    );
    assert.ok(failure instanceof Error, 'the query fails');
    assert.equal(isDatabaseOutage(failure), true, failure.message);
  } finally {
    for (const socket of sockets) socket.destroy();
    await handle.db.destroy();
    await closeWithin(silent, () => `the silent server (${sockets.size} sockets)`);
  }
});

if (testDialects().includes('postgres'))
  describe('a pooled PostgreSQL connection lost while idle', () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase('postgres');
    });
    after(() => database.drop());

    test('is reported, and the next query runs on a new connection', async () => {
      const { url, applicationName } = named(database.url);
      let reported: (err: Error) => void = () => undefined;
      const lost = new Promise<Error>((resolve) => (reported = resolve));
      const handle = openDatabase(url, { onIdleConnectionError: (err) => reported(err) });
      try {
        assert.equal((await sql<{ one: number }>`select 1 as one`.execute(handle.db)).rows[0]?.one, 1);
        assert.equal(await terminate(applicationName), 1, 'one idle connection in the pool');
        assert.match(
          (await withDeadline(lost, 20_000, 'the pool reporting the lost idle connection')).message,
          /terminat/,
        );
        assert.equal((await sql<{ one: number }>`select 1 as one`.execute(handle.db)).rows[0]?.one, 1);
      } finally {
        await handle.db.destroy();
      }
    });

    test('the receiver kit’s inbox survives it too', async () => {
      const { url, applicationName } = named(database.url);
      const inbox = await openInbox(url);
      const warned = new Promise<Error>((resolve) => process.once('warning', resolve));
      try {
        assert.ok((await terminate(applicationName)) >= 1);
        assert.match(
          (await withDeadline(warned, 20_000, 'the inbox warning about the lost idle connection')).message,
          /inbox database: a pooled connection was lost while idle/,
        );
        assert.deepEqual(await inbox.list(), []);
      } finally {
        await inbox.close();
      }
    });
  });

/** The error `work` fails with; fails the test when it succeeds, or has not settled after `deadlineMs`. */
async function failureOf(work: Promise<unknown>, deadlineMs = 20_000): Promise<Error> {
  const result = await withDeadline(
    work.then(
      () => 'succeeded',
      (err: unknown) => err,
    ),
    deadlineMs,
    'the query expected to fail (still waiting)',
  );
  assert.ok(result instanceof Error, `expected a failure, got: ${String(result)}`);
  return result;
}

/** `select 1` on the pool, bounded: after a fault the pool must serve again, not hang. */
async function one(handle: DatabaseHandle): Promise<number | undefined> {
  const query = sql<{ one: number }>`select 1 as one`.execute(handle.db);
  return (await withDeadline(query, 20_000, 'select 1 on the pool after the fault')).rows[0]?.one;
}

if (testDialects().includes('postgres'))
  describe('a PostgreSQL connection lost while checked out', () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase('postgres');
    });
    after(() => database.drop());

    test('inside a transaction, between queries: the transaction fails as an outage, the process goes on, the pool replaces the connection', async () => {
      const { url, applicationName } = named(database.url);
      const handle = openDatabase(url);
      try {
        const transaction = handle.db.transaction().execute(async (trx) => {
          await sql`select 1`.execute(trx);
          assert.equal(await terminate(applicationName), 1, 'the one connection, checked out by the transaction');
          await sql`select 1`.execute(trx);
        });
        const failure = await failureOf(transaction);
        assert.equal(isDatabaseOutage(failure), true, failure.message);
        assert.equal(await one(handle), 1, 'a new connection serves the next query');
      } finally {
        await handle.db.destroy();
      }
    });

    test('mid-query, by a TCP reset: the query fails as an outage, and the pool replaces the connection', async () => {
      const { url, applicationName } = named(database.url);
      const proxy = TcpProxy.for(url, 5432);
      await proxy.start();
      const handle = openDatabase(proxy.rewrite(url));
      try {
        assert.equal(await one(handle), 1);
        const failed = failureOf(sql`select pg_sleep(3)`.execute(handle.db));
        await waitForActiveQuery(applicationName);
        proxy.reset();
        const failure = await failed;
        assert.equal(isDatabaseOutage(failure), true, failure.message);
        assert.equal(await one(handle), 1);
      } finally {
        await handle.db.destroy();
        await proxy.close();
      }
    });
  });

if (testDialects().includes('postgres'))
  describe('PostgreSQL timeouts', () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase('postgres');
    });
    after(() => database.drop());

    test('a statement past the statement timeout is cancelled (57014), an outage', async () => {
      const handle = openDatabase(database.url, { statementTimeoutMs: 200 });
      try {
        const failure = await failureOf(sql`select pg_sleep(5)`.execute(handle.db));
        assert.equal((failure as Error & { code?: string }).code, '57014', failure.message);
        assert.equal(isDatabaseOutage(failure), true);
        assert.equal(await one(handle), 1, 'the connection stays usable');
      } finally {
        await handle.db.destroy();
      }
    });

    test('a lock held by another session past the lock timeout (55P03) is an outage', async () => {
      const handle = openDatabase(database.url, { lockTimeoutMs: 200 });
      const holder = new pg.Client({ connectionString: database.url });
      await holder.connect();
      try {
        await sql`create table if not exists locked_here (id int)`.execute(handle.db);
        await holder.query('begin');
        await holder.query('lock table locked_here in access exclusive mode');
        const failure = await failureOf(sql`select * from locked_here`.execute(handle.db));
        assert.equal((failure as Error & { code?: string }).code, '55P03', failure.message);
        assert.equal(isDatabaseOutage(failure), true);
        await holder.query('rollback');
        assert.deepEqual((await sql`select * from locked_here`.execute(handle.db)).rows, []);
      } finally {
        await holder.end();
        await handle.db.destroy();
      }
    });

    test('a transaction idle past its timeout is ended by the server (25P03), an outage', async () => {
      const handle = openDatabase(database.url, { idleInTransactionTimeoutMs: 200 });
      try {
        const transaction = handle.db.transaction().execute(async (trx) => {
          await sql`select 1`.execute(trx);
          await sql`select pg_sleep(0.6)`.execute(handle.db); // another connection; this transaction idles meanwhile
          await sql`select 1`.execute(trx);
        });
        const failure = await failureOf(transaction);
        assert.equal(isDatabaseOutage(failure), true, failure.message);
        assert.equal(await one(handle), 1);
      } finally {
        await handle.db.destroy();
      }
    });

    test('a stalled network fails the query after the statement timeout plus 2 s, closes that connection, and the next query opens a new one', async () => {
      const proxy = TcpProxy.for(database.url, 5432);
      await proxy.start();
      const handle = openDatabase(proxy.rewrite(database.url), { statementTimeoutMs: 300, connectTimeoutMs: 1000 });
      try {
        assert.equal(await one(handle), 1);
        proxy.stall();
        const failure = await failureOf(sql`select 1`.execute(handle.db));
        assert.equal(isDatabaseOutage(failure), true, failure.message);
        const connectFailure = await failureOf(sql`select 1`.execute(handle.db));
        assert.equal(
          isDatabaseOutage(connectFailure),
          true,
          `a new connection through the stall: ${connectFailure.message}`,
        );
        proxy.resume();
        const accepted = proxy.accepted;
        assert.equal(await one(handle), 1);
        assert.ok(proxy.accepted > accepted, 'on a new connection');
      } finally {
        await handle.db.destroy();
        await proxy.close();
      }
    });

    test('migrations run without the timeouts, and the connection gets them back afterwards', async () => {
      const handle = openDatabase(database.url, {
        statementTimeoutMs: 200,
        lockTimeoutMs: 150,
        idleInTransactionTimeoutMs: 250,
      });
      try {
        await withoutTimeouts(handle, (db) => sql`select pg_sleep(0.5)`.execute(db));
        const settings = async () =>
          (
            await sql<
              Record<string, string>
            >`select current_setting('statement_timeout') as statement, current_setting('lock_timeout') as lock, current_setting('idle_in_transaction_session_timeout') as idle`.execute(
              handle.db,
            )
          ).rows[0];
        assert.deepEqual(await settings(), { statement: '200ms', lock: '150ms', idle: '250ms' });
        assert.equal(
          isDatabaseOutage(await failureOf(sql`select pg_sleep(1)`.execute(handle.db))),
          true,
          'bounded again',
        );
      } finally {
        await handle.db.destroy();
      }
    });
  });

/** Polls pg_stat_activity until a query of `applicationName` is running. */
async function waitForActiveQuery(applicationName: string): Promise<void> {
  const admin = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
  await admin.connect();
  try {
    await waitUntil(
      async () => {
        const { rows } = await admin.query(
          "select 1 from pg_stat_activity where application_name = $1 and state = 'active'",
          [applicationName],
        );
        return rows.length > 0;
      },
      5000,
      () => `no active query of ${applicationName}`,
    );
  } finally {
    await admin.end();
  }
}
