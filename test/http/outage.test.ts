// A database that cannot be reached is a temporary outage: 503 problem with Retry-After
// (docs/operations/failure-behaviour.md), never a 500, and requests succeed again once it is back.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createTestDatabase, TEST_WEBHOOK_SECRET_KEY, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { startChildServer, type ChildServer } from '../helpers/child-server.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { isConnectFailure, isDatabaseOutage } from '../../src/http/problems/outage.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { waitUntil } from '../helpers/deadline.ts';

/** IDEMPOTENCY_LOCK_SECONDS by default. */
const KEY_LOCK_SECONDS = 30;

function assertOutage(res: CallResult, label: string): void {
  expectProblem(res, 503, 'temporarily-unavailable', label);
  assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  const retryAfter = res.headers.get('retry-after');
  if (label.includes('idempotent')) {
    // 5 s, or, when the claim the request may have made on a lost connection could not be released, the
    // time until its lock ends (docs/operations/failure-behaviour.md, "PostgreSQL").
    assert.match(retryAfter ?? '', /^\d+$/, label);
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= KEY_LOCK_SECONDS, `${label}: Retry-After ${retryAfter}`);
  } else assert.equal(retryAfter, '5', label);
  assert.deepEqual(Object.keys(res.json).sort(), ['detail', 'instance', 'requestId', 'status', 'title', 'type']);
  assert.doesNotMatch(res.text, /ECONN|postgres|sqlite|locked|terminated|pool|Error:/i, `${label} leaks: ${res.text}`);
}

/** The requests an outage must not turn into 500s: reads, writes, and writes under an Idempotency-Key. */
function requestsDuringOutage(
  url: string,
  token: string,
  orderId: number,
  key = 'outage-1',
  signal: () => AbortSignal | undefined = () => undefined,
): Array<[string, Promise<CallResult>]> {
  return [
    ['GET one', call(url, 'GET', `/api/orders/${orderId}`, { token, signal: signal() })],
    ['GET list', call(url, 'GET', '/api/orders', { token, signal: signal() })],
    ['POST', call(url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 }, signal: signal() })],
    [
      'POST idempotent',
      call(url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 2 },
        headers: { 'idempotency-key': key },
        signal: signal(),
      }),
    ],
  ];
}

for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe(`database outage [${dialect}]`, () => {
    let database: TestDatabase;
    let relay: TcpProxy;
    let server: TestServer;
    let token: string;
    before(async () => {
      database = await createTestDatabase('postgres');
      relay = TcpProxy.for(database.url, 5432);
      await relay.start();
      // The dispatcher's LISTEN connection is not what this test is about.
      server = await startServer('postgres', {
        DATABASE_URL: relay.rewrite(database.url),
        WEBHOOK_DISPATCHER: 'false',
      });
      token = await server.issuer.clientToken('orders:read orders:write');
    });
    after(async () => {
      await server.close();
      await relay.cut();
      await database.drop();
    });

    test('an unreachable PostgreSQL answers 503 with Retry-After, then serves again once it is back', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      assert.equal(created.status, 201, created.text);
      await relay.cut();
      for (let round = 0; round < 2; round++) {
        // Round 0 may meet pooled connections that just died; round 1 needs new ones: ECONNREFUSED.
        for (const [label, pending] of requestsDuringOutage(server.url, token, created.json.Id))
          assertOutage(await pending, `${label} #${round}`);
      }
      expectStatus(await call(server.url, 'GET', '/healthz'), 200, 'the process itself is alive');
      await relay.start(); // same port
      const again = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 2 },
        headers: { 'idempotency-key': 'outage-1' },
      });
      assert.equal(again.status, 201, again.text);
    });
  });
}

if (testDialects().includes('postgres')) {
  describe('a PostgreSQL that holds a lock or stalls [postgres]', () => {
    let database: TestDatabase;
    let proxy: TcpProxy;
    let server: TestServer;
    let token: string;
    before(async () => {
      database = await createTestDatabase('postgres');
      proxy = TcpProxy.for(database.url, 5432);
      await proxy.start();
      server = await startServer('postgres', {
        DATABASE_URL: proxy.rewrite(database.url),
        WEBHOOK_DISPATCHER: 'false',
        DATABASE_LOCK_TIMEOUT: '500ms',
        DATABASE_STATEMENT_TIMEOUT: '1s',
        DATABASE_CONNECT_TIMEOUT: '1s',
      });
      token = await server.issuer.clientToken('orders:read orders:write');
    });
    after(async () => {
      await server.close();
      await proxy.close();
      await database.drop();
    });

    /** Every request answered (the deadline is only there to fail instead of hanging), each a 503 outage. */
    async function assertAllOutages(label: string, orderId: number): Promise<void> {
      const pending = requestsDuringOutage(server.url, token, orderId, `${label}-key`, () =>
        AbortSignal.timeout(15_000),
      );
      for (const [name, answer] of pending) assertOutage(await answer, `${label}: ${name}`);
    }

    /** /readyz must answer within 2 s whatever the database does (2.5 s leaves room for the test's own scheduling). */
    async function readyWithin2s(): Promise<CallResult> {
      return call(server.url, 'GET', '/readyz', { signal: AbortSignal.timeout(2500) });
    }

    async function eventuallyCreates(label: string): Promise<void> {
      let last: CallResult | undefined;
      await waitUntil(
        async () => {
          last = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 3 } });
          return last.status === 201;
        },
        15_000,
        () => `${label}: no 201; last ${last?.status} ${last?.text}`,
      );
    }

    test('a table locked by another session: requests answer 503 with Retry-After after the lock timeout, /readyz stays ready within 2 s; then they succeed', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      assert.equal(created.status, 201, created.text);
      const holder = new pg.Client({ connectionString: database.url });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('lock table orders in access exclusive mode');
        const ready = readyWithin2s();
        await assertAllOutages('locked', created.json.Id);
        // One table locked is not a database down: the instance stays in rotation (its other routes
        // work), and the probe does not wait on the lock.
        const answer = await ready;
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.json.checks?.database, 'ok', answer.text);
      } finally {
        await holder.query('rollback');
        await holder.end();
      }
      await eventuallyCreates('after the lock');
      expectStatus(await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token }), 200);
    });

    test('a stalled network: requests answer 503 with Retry-After in bounded time, /readyz within 2 s names the database; then they succeed', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      assert.equal(created.status, 201, created.text);
      proxy.stall();
      try {
        const ready = readyWithin2s();
        await assertAllOutages('stalled', created.json.Id);
        const answer = await ready;
        assert.equal(answer.status, 503, answer.text);
        assert.match(answer.json.type, /\/problems\/not-ready$/);
        assert.equal(answer.json.checks?.database, 'unavailable', answer.text);
        assert.match(answer.headers.get('retry-after') ?? '', /^\d+$/);
        assert.equal(
          (await readyWithin2s()).json.checks?.database,
          'unavailable',
          'again, while the first probe may still wait',
        );
      } finally {
        proxy.resume();
      }
      await eventuallyCreates('after the stall');
    });
  });
}

// `signet serve` in a child process: a wait that blocked its event loop would not block the test's
// own timers, so the probes' deadlines below see it.
describe('database outage [sqlite]', () => {
  /** SQLITE_BUSY_TIMEOUT here: how long a write waits for another process's write lock. */
  const BUSY_MS = 1000;
  let server: ChildServer;
  let token: string;
  before(async () => {
    server = await startChildServer({
      env: {
        WEBHOOK_DISPATCHER: 'false',
        SQLITE_BUSY_TIMEOUT: `${BUSY_MS}ms`,
        WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
      },
    });
    token = await server.issuer.clientToken('orders:read orders:write');
  });
  after(() => server.stop());

  /** Runs `check` while another process holds the write lock (BEGIN IMMEDIATE), then releases it. */
  async function whileLockedElsewhere(check: () => Promise<void>): Promise<void> {
    const other = new DatabaseSync(join(server.dir, 'signet.db'));
    other.exec('BEGIN IMMEDIATE');
    try {
      await check();
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  }

  test('a write lock held by another process past SQLITE_BUSY_TIMEOUT answers 503 with Retry-After, without freezing other requests', async () => {
    const created = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } });
    assert.equal(created.status, 201, created.text);
    await whileLockedElsewhere(async () => {
      let waiting = true;
      const write = call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 2 },
      }).finally(() => (waiting = false));
      write.catch(() => undefined); // awaited below, unless an assertion fails first
      // node:sqlite is synchronous: a busy_timeout wait would hold the event loop, and every other
      // answer with it. Probed for as long as the write waits, each probe must answer well within the bound.
      let probes = 0;
      await waitUntil(
        async () => {
          if (!waiting) return true;
          const live = await call(server.url, 'GET', '/healthz', { signal: AbortSignal.timeout(BUSY_MS) });
          assert.equal(live.status, 200, live.text);
          probes++;
          return false;
        },
        30_000,
        () => `the write still waits after ${probes} probes`,
      );
      assert.ok(probes > 1, `/healthz answered ${probes} time(s) while the write waited`);
      expectStatus(
        await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token }),
        200,
        'reads go on (WAL)',
      );
      assertOutage(await write, 'POST');
      assertOutage(await call(server.url, 'POST', `/api/orders/${created.json.Id}/pay`, { token }), 'pay');
    });
    expectStatus(
      await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 } }),
      201,
      'writes succeed once the lock is released',
    );
  });

  test('writes queued behind one that gave up answer 503 within the bound too, and /readyz answers within 2 s', async () => {
    await whileLockedElsewhere(async () => {
      // Each answer within two bounds (its own wait, and the one ahead of it that gave up), not one bound per queued
      // write.
      const writes = Array.from({ length: 8 }, (_, i) =>
        call(server.url, 'POST', '/api/orders', {
          token,
          body: { CustomerId: CUSTOMER, Total: i + 1 },
          signal: AbortSignal.timeout(BUSY_MS * 2 + 1500),
        }),
      );
      for (const write of writes) write.catch(() => undefined); // awaited below, unless an assertion fails first
      const ready = await call(server.url, 'GET', '/readyz', { signal: AbortSignal.timeout(2500) });
      assert.ok(ready.status === 200 || ready.status === 503, ready.text);
      assert.ok(
        ['ok', 'unavailable'].includes(ready.json.checks?.database),
        `/readyz names the database's state: ${ready.text}`,
      );
      for (const [i, write] of writes.entries()) assertOutage(await write, `POST #${i}`);
    });
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

  // A claim of an Idempotency-Key that met one of these never reached the database: nothing to release
  // (src/idempotency/idempotency-release.ts). A connection lost under a sent statement is not one.
  test('failures to connect are told from connections lost under a statement', () => {
    const neverSent = [
      withProps('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' }),
      new AggregateError([withProps('connect ECONNREFUSED ::1:5432', { code: 'ECONNREFUSED' })]),
      new Error('timeout exceeded when trying to connect'),
      withProps('the database system is starting up', { code: '57P03', severity: 'FATAL' }),
      withProps('sorry, too many clients already', { code: '53300', severity: 'FATAL' }),
    ];
    for (const err of neverSent) assert.ok(isConnectFailure(err), err.message);
    const maybeSent = [
      withProps('read ECONNRESET', { code: 'ECONNRESET' }),
      new Error('Connection terminated unexpectedly'),
      withProps('terminating connection due to administrator command', { code: '57P01', severity: 'FATAL' }),
      withProps('canceling statement due to statement timeout', { code: '57014', severity: 'ERROR' }),
      new AggregateError([]),
    ];
    for (const err of maybeSent) assert.equal(isConnectFailure(err), false, err.message);
  });

  // Set on every connection (DATABASE_STATEMENT_TIMEOUT, DATABASE_LOCK_TIMEOUT,
  // DATABASE_IDLE_IN_TRANSACTION_TIMEOUT): they fire when the database is blocked or too slow right
  // now (a table lock held elsewhere, an overload), not because the request is wrong, and the same
  // request succeeds once that clears. So they are 503 with Retry-After, not 500.
  test('the timeouts the service sets on PostgreSQL are, and so is a query left without an answer', () => {
    const outages = [
      withProps('canceling statement due to statement timeout', { code: '57014', severity: 'ERROR' }),
      withProps('canceling statement due to lock timeout', { code: '55P03', severity: 'ERROR' }),
      withProps('terminating connection due to idle-in-transaction timeout', { code: '25P03', severity: 'FATAL' }),
      withProps('no answer from PostgreSQL within 7000 ms; connection closed', { code: 'ETIMEDOUT' }),
      new Error('Client has encountered a connection error and is not queryable'),
    ];
    for (const err of outages) assert.ok(isDatabaseOutage(err), err.message);
  });

  test('query and programming errors are not', () => {
    const faults = [
      withProps('duplicate key value violates unique constraint', { code: '23505', severity: 'ERROR' }),
      withProps('relation "x" does not exist', { code: '42P01', severity: 'ERROR' }),
      withProps('UNIQUE constraint failed', { code: 'ERR_SQLITE_ERROR', errcode: 19 }),
      new TypeError("Cannot read properties of undefined (reading 'id')"),
      new Error('driver has already been destroyed'),
      'a string',
      undefined,
    ];
    for (const err of faults) assert.ok(!isDatabaseOutage(err), String(err));
  });
});
