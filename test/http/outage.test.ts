// A database that cannot be reached is a temporary outage: 503 problem with Retry-After (the
// contract's "503 Temporary outage"), never a 500, and requests succeed again once it is back.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { isDatabaseOutage } from '../../src/http/outage.ts';

function assertOutage(res: CallResult, label: string): void {
  assert.equal(res.status, 503, `${label}: ${res.text}`);
  assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  assert.equal(res.headers.get('retry-after'), '5', label);
  assert.match(res.json.type, /\/problems\/temporarily-unavailable$/);
  assert.deepEqual(Object.keys(res.json).sort(), ['detail', 'instance', 'requestId', 'status', 'title', 'type']);
  assert.doesNotMatch(res.text, /ECONN|postgres|sqlite|locked|terminated|pool|Error:/i, `${label} leaks: ${res.text}`);
}

/** The requests an outage must not turn into 500s: reads, writes, and writes under an Idempotency-Key. */
function requestsDuringOutage(url: string, token: string, orderId: number): Array<[string, Promise<CallResult>]> {
  return [
    ['GET one', call(url, 'GET', `/api/orders/${orderId}`, { token })],
    ['GET list', call(url, 'GET', '/api/orders', { token })],
    ['POST', call(url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 } })],
    ['POST idempotent', call(url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 }, headers: { 'idempotency-key': 'outage-1' } })],
  ];
}

/** A TCP relay in front of PostgreSQL that the test can cut (refusing and dropping connections) and restore. */
class Relay {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  async start(): Promise<void> {
    this.#server = createServer((client) => {
      const upstream = connect(this.#target.port, this.#target.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => {
          this.#sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    this.#server.listen(this.port, '127.0.0.1');
    await once(this.#server, 'listening');
    this.port = (this.#server.address() as { port: number }).port;
  }

  /** New connections are refused (ECONNREFUSED) and open ones are dropped. */
  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.#server!.close(resolve));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }
}

for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe(`database outage [${dialect}]`, () => {
    let database: TestDatabase;
    let relay: Relay;
    let server: TestServer;
    let token: string;
    before(async () => {
      database = await createTestDatabase('postgres');
      const url = new URL(database.url);
      relay = new Relay({ host: url.hostname || '127.0.0.1', port: Number(url.port || 5432) });
      await relay.start();
      url.hostname = '127.0.0.1';
      url.port = String(relay.port);
      // The dispatcher's LISTEN connection is not what this test is about.
      server = await startServer('postgres', { DATABASE_URL: url.toString(), WEBHOOK_DISPATCHER: 'false' });
      token = await server.issuer.clientToken('orders:read orders:write');
    });
    after(async () => {
      await server.close();
      await relay.cut();
      await database.drop();
    });

    test('an unreachable PostgreSQL answers 503 with Retry-After, then serves again once it is back', async () => {
      const created = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } });
      assert.equal(created.status, 201, created.text);
      await relay.cut();
      for (let round = 0; round < 2; round++) {
        // Round 0 may meet pooled connections that just died; round 1 needs new ones: ECONNREFUSED.
        for (const [label, pending] of requestsDuringOutage(server.url, token, created.json.Id)) assertOutage(await pending, `${label} #${round}`);
      }
      assert.equal((await call(server.url, 'GET', '/healthz')).status, 200, 'the process itself is alive');
      await relay.start(); // same port
      const again = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 }, headers: { 'idempotency-key': 'outage-1' } });
      assert.equal(again.status, 201, again.text);
    });
  });
}

describe('database outage [sqlite]', () => {
  let database: TestDatabase;
  let server: TestServer;
  let token: string;
  before(async () => {
    database = await createTestDatabase('sqlite');
    server = await startServer('sqlite', { DATABASE_URL: database.url, WEBHOOK_DISPATCHER: 'false' });
    token = await server.issuer.clientToken('orders:read orders:write');
  });
  after(async () => {
    await server.close();
    await database.drop();
  });

  test('a write lock held by another process (SQLITE_BUSY) answers 503 with Retry-After', async () => {
    const created = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } });
    assert.equal(created.status, 201, created.text);
    // Without waiting out busy_timeout: the lock is held for the whole check anyway.
    await sql`PRAGMA busy_timeout = 0`.execute(server.app.database.db);
    const other = new DatabaseSync(database.url.slice('sqlite:'.length));
    other.exec('BEGIN IMMEDIATE');
    try {
      assertOutage(await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 } }), 'POST');
      assertOutage(await call(server.url, 'POST', `/api/orders/${created.json.Id}/pay`, { token }), 'pay');
      assert.equal((await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token })).status, 200, 'reads go on (WAL)');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    assert.equal((await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 } })).status, 201);
  });
});

describe('which driver errors are an outage', () => {
  const withProps = (message: string, props: Record<string, unknown>) => Object.assign(new Error(message), props);

  test('connection-class errors of node-postgres and node:sqlite are', () => {
    const outages = [
      withProps('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' }),
      withProps('read ECONNRESET', { code: 'ECONNRESET' }),
      withProps('connect ETIMEDOUT', { code: 'ETIMEDOUT' }),
      new AggregateError([withProps('connect ECONNREFUSED ::1:5432', { code: 'ECONNREFUSED' })]),
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated unexpectedly'),
      withProps('connection failure', { code: '08006', severity: 'ERROR' }),
      withProps('terminating connection due to administrator command', { code: '57P01', severity: 'FATAL' }),
      withProps('the database system is starting up', { code: '57P03', severity: 'FATAL' }),
      withProps('sorry, too many clients already', { code: '53300', severity: 'FATAL' }),
      withProps('database "x" is not currently accepting connections', { code: '55000', severity: 'FATAL' }),
      withProps('database is locked', { code: 'ERR_SQLITE_ERROR', errcode: 5 }),
      withProps('database is locked', { code: 'ERR_SQLITE_ERROR', errcode: 517 }), // SQLITE_BUSY_SNAPSHOT
    ];
    for (const err of outages) assert.ok(isDatabaseOutage(err), err.message);
  });

  test('query and programming errors are not', () => {
    const faults = [
      withProps('duplicate key value violates unique constraint', { code: '23505', severity: 'ERROR' }),
      withProps('relation "x" does not exist', { code: '42P01', severity: 'ERROR' }),
      withProps('canceling statement due to statement timeout', { code: '57014', severity: 'ERROR' }),
      withProps('UNIQUE constraint failed', { code: 'ERR_SQLITE_ERROR', errcode: 19 }),
      new TypeError("Cannot read properties of undefined (reading 'id')"),
      new Error('driver has already been destroyed'),
      'a string',
      undefined,
    ];
    for (const err of faults) assert.ok(!isDatabaseOutage(err), String(err));
  });
});
