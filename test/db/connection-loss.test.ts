// A PostgreSQL connection lost while idle in the pool (a database restart, a failover, an idle timeout
// on a proxy) must not end the process: node-postgres reports it as the pool's 'error' event, which
// throws when nothing listens. PostgreSQL only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.ts';
import { isDatabaseOutage } from '../../src/http/outage.ts';
import { openInbox } from '../../src/receiver/index.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';

/** Ends every server session of the given application_name, as an administrator or a failover would. */
async function terminate(applicationName: string): Promise<number> {
  const admin = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ pid: number }>('select pg_terminate_backend(pid) as pid from pg_stat_activity where application_name = $1', [applicationName]);
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
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const handle = openDatabase(`postgres://nobody@127.0.0.1:${(silent.address() as AddressInfo).port}/none`, { connectTimeoutMs: 200 });
  try {
    const failure = await sql`select 1`.execute(handle.db).then(() => undefined, (err: unknown) => err);
    assert.ok(failure instanceof Error, 'the query fails');
    assert.equal(isDatabaseOutage(failure), true, failure.message);
  } finally {
    for (const socket of sockets) socket.destroy();
    await handle.db.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  }
});

if (testDialects().includes('postgres')) describe('a pooled PostgreSQL connection lost while idle', () => {
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
      assert.match((await lost).message, /terminat/);
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
      assert.match((await warned).message, /inbox database: a pooled connection was lost while idle/);
      assert.deepEqual(await inbox.list(), []);
    } finally {
      await inbox.close();
    }
  });
});
