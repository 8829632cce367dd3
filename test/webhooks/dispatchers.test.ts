// `signet dispatcher` as real child processes next to an API server that does not dispatch
// (WEBHOOK_DISPATCHER=false): a dispatcher killed mid-delivery loses nothing (its lease expires and
// another one delivers), a dispatcher woken while all its slots are busy keeps its process alive
// (`signet serve`), three dispatchers on one PostgreSQL never send one delivery twice at once, and
// LISTEN/NOTIFY wakes a dispatcher in another process without waiting for its poll.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import {
  createTestDatabase,
  TEST_WEBHOOK_SECRET_KEY,
  testDialects,
  type TestDatabase,
  type TestDialect,
} from '../helpers/databases.ts';
import { closeWithin, listenOnLoopback, withDeadline } from '../helpers/deadline.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE } from '../helpers/tokens.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  WEBHOOK_SCOPES,
} from '../helpers/webhook-receiver.ts';
import { expectStatus } from '../helpers/expect.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;

interface Dispatcher {
  child: ChildProcess;
  output(): string;
  exited: Promise<void>;
}

/** Every child any test started; after() kills whatever is still running. */
const children = new Set<Dispatcher>();

after(async () => {
  await Promise.all([...children].map((d) => kill(d, 'SIGKILL')));
});

/** SIGTERM (graceful) or SIGKILL; a child that has not exited 12 s after SIGTERM (its grace is 10 s) is killed. */
async function kill(d: Dispatcher, signal: NodeJS.Signals): Promise<void> {
  const running = () => d.child.exitCode === null && d.child.signalCode === null;
  if (running()) d.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const escalate = new Promise<void>((resolve) => (timer = setTimeout(resolve, 12_000)));
  await Promise.race([d.exited, escalate]);
  clearTimeout(timer);
  if (running()) {
    d.child.kill('SIGKILL');
    await withDeadline(d.exited, 10_000, () => `pid ${d.child.pid} still running after SIGKILL: ${d.output()}`);
  }
}

/** Starts `signet <command>` and resolves once its output matches `ready`. */
async function startChild(command: string, ready: RegExp, env: Record<string, string>): Promise<Dispatcher> {
  const child = spawn(process.execPath, [BIN, command], {
    env: {
      ...process.env,
      ...LOCAL_WEBHOOKS_ENV,
      WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
      WEBHOOK_TIMEOUT: '5s',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const d: Dispatcher = { child, output: () => output, exited };
  children.add(d);
  await waitUntil(
    () => {
      if (child.exitCode !== null) throw new Error(`signet ${command} exited with ${child.exitCode}: ${output}`);
      return ready.test(output);
    },
    15_000,
    () => `signet ${command} did not start: ${output}`,
  );
  return d;
}

/** Starts `signet dispatcher` on `databaseUrl` and resolves once it logs that it runs. */
function startDispatcher(databaseUrl: string, env: Record<string, string> = {}): Promise<Dispatcher> {
  return startChild('dispatcher', /webhook dispatcher started/, { DATABASE_URL: databaseUrl, ...env });
}

/** An API server that leaves dispatching to `signet dispatcher` processes, on a database the test knows the URL of. */
async function startApi(
  dialect: TestDialect,
): Promise<{ server: TestServer; database: TestDatabase; token: string; close(): Promise<void> }> {
  const database = await createTestDatabase(dialect);
  const server = await startServer(dialect, {
    ...LOCAL_WEBHOOKS_ENV,
    WEBHOOK_DISPATCHER: 'false',
    DATABASE_URL: database.url,
  });
  const token = await server.issuer.clientToken(WEBHOOK_SCOPES);
  return {
    server,
    database,
    token,
    close: async () => {
      await server.close();
      await database.drop();
    },
  };
}

async function createOrder(server: TestServer, token: string): Promise<number> {
  const res = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 10 } });
  assert.equal(res.status, 201, res.text);
  return res.json.Id;
}

interface Attempt {
  Attempt: number;
  StartedAtUtc: string;
  StatusCode: number | null;
}

/**
 * Answers each delivery after `delayMs` (and once `gate` resolves, when one is set) and records, per
 * delivery id (webhook-id), how many requests overlapped.
 */
async function startCountingReceiver(delayMs: number) {
  const sockets = new Set<Socket>();
  const state = {
    url: '',
    /** delivery id → requests received */
    seen: new Map<string, number>(),
    /** dispatcher (its header name) → requests received */
    byDispatcher: new Map<string, number>(),
    inFlight: new Map<string, number>(),
    overlaps: [] as string[],
    total: 0,
    answeredAt: [] as number[],
    gate: undefined as Promise<void> | undefined,
  };
  const dispatcherOf = (headers: IncomingHttpHeaders) =>
    Object.keys(headers).find((h) => /^x-.+-delivery$/.test(h)) ?? '?';
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const id = String(request.headers['webhook-id']);
      state.total += 1;
      state.seen.set(id, (state.seen.get(id) ?? 0) + 1);
      const by = dispatcherOf(request.headers);
      state.byDispatcher.set(by, (state.byDispatcher.get(by) ?? 0) + 1);
      const now = (state.inFlight.get(id) ?? 0) + 1;
      state.inFlight.set(id, now);
      if (now > 1) state.overlaps.push(id);
      const answer = () => {
        state.inFlight.set(id, (state.inFlight.get(id) ?? 1) - 1);
        state.answeredAt.push(Date.now());
        response.writeHead(200).end();
      };
      void (state.gate ?? Promise.resolve()).then(() => setTimeout(answer, delayMs));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  state.url = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  return {
    state,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await closeWithin(server, () => `the counting receiver (${sockets.size} sockets)`);
    },
  };
}

for (const dialect of testDialects()) {
  describe(`signet dispatcher crash safety [${dialect}]`, () => {
    test('a dispatcher killed mid-delivery loses nothing: once its lease expires another dispatcher delivers the same delivery', async () => {
      const api = await startApi(dialect);
      const receiver = await startReceiver();
      try {
        receiver.answer = (_request, index) => (index === 0 ? 'hang' : { status: 200 });
        const endpoint = await registerEndpoint(api.server, api.token, receiver.url, ['order.created']);
        const first = await startDispatcher(api.database.url);
        await createOrder(api.server, api.token);
        const [hung] = await receiver.waitFor(1);
        const deliveryId = String(hung!.headers['x-service-delivery']);

        const db = api.server.app.database.db;
        const leased = await db
          .selectFrom('webhook_deliveries')
          .select(['id', 'state', 'lease_owner', 'lease_until'])
          .executeTakeFirstOrThrow();
        assert.equal(leased.id, deliveryId);
        assert.equal(leased.state, 'pending');
        assert.ok(leased.lease_owner, 'the first dispatcher holds the lease');
        const leaseUntil = new Date(leased.lease_until!).getTime();

        await kill(first, 'SIGKILL');
        assert.equal(first.child.signalCode, 'SIGKILL');
        await startDispatcher(api.database.url);
        // The lease (timeout 5 s + 10 s margin) has to run out first.
        const received = await receiver.waitFor(2, 30_000);
        assert.deepEqual(
          received.map((r) => r.headers['x-service-delivery']),
          [deliveryId, deliveryId],
        );

        let attempts: Attempt[] = [];
        await waitUntil(
          async () => {
            const res = await call(api.server.url, 'GET', `/api/webhooks/deliveries/${deliveryId}`, {
              token: api.token,
            });
            attempts = res.json.Attempts;
            return res.json.State === 'succeeded';
          },
          10_000,
          () => `delivery ${deliveryId} succeeded; attempts ${JSON.stringify(attempts).slice(0, 2000)}`,
        );
        // The killed attempt was never recorded; the one that counts is the second dispatcher's.
        assert.deepEqual(
          attempts.map((a) => [a.Attempt, a.StatusCode]),
          [[1, 200]],
        );
        assert.ok(
          Date.parse(attempts[0]!.StartedAtUtc) >= leaseUntil,
          `retaken at ${attempts[0]!.StartedAtUtc}, not before the lease ran out at ${new Date(leaseUntil).toISOString()}`,
        );
        const list = await call(api.server.url, 'GET', `/api/webhooks/${endpoint.json.Id}/deliveries`, {
          token: api.token,
        });
        assert.deepEqual(
          list.json.Items.map((d: { Id: string }) => d.Id),
          [deliveryId],
          'one delivery, not a new one',
        );
      } finally {
        await Promise.all([...children].map((d) => kill(d, 'SIGTERM')));
        await receiver.close();
        await api.close();
      }
    });
  });

  describe(`signet serve at full dispatch capacity [${dialect}]`, () => {
    test('a dispatcher woken while every slot is busy keeps the process serving, and delivers the new event once a slot frees', async () => {
      const database = await createTestDatabase(dialect);
      const issuer = await createTestIssuer();
      // Two slow receivers that hold every request until the test opens the gate.
      let open = () => {};
      const gate = new Promise<void>((resolve) => (open = resolve));
      const slow = [await startCountingReceiver(0), await startCountingReceiver(0)];
      for (const r of slow) r.state.gate = gate;
      const fast = await startReceiver();
      try {
        const serve = await startChild('serve', /listening at http:\/\/127\.0\.0\.1:\d+/, {
          PORT: '0',
          DATABASE_URL: database.url,
          AUTH_ISSUER: TEST_ISSUER,
          API_RESOURCE: TEST_RESOURCE,
          AUTH_JWKS_FILE: issuer.jwksFile,
          RATE_LIMIT_MAX: '100000',
          WEBHOOK_CONCURRENCY: '2',
          WEBHOOK_ENDPOINT_CONCURRENCY: '1',
          METRICS_PORT: 'off',
        });
        const base = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(serve.output())![1]!;
        const token = await issuer.clientToken(WEBHOOK_SCOPES);
        // A stuck process must fail the test, not hang it: every request has a deadline.
        const request = async (method: string, path: string, body?: unknown) => {
          const headers: Record<string, string> = { authorization: `Bearer ${token}` };
          if (body !== undefined) headers['content-type'] = 'application/json';
          const res = await fetch(`${base}${path}`, {
            method,
            headers,
            body: body === undefined ? undefined : JSON.stringify(body),
            signal: AbortSignal.timeout(5000),
          });
          const text = await res.text();
          let json = {} as { Id: string };
          try {
            json = JSON.parse(text) as { Id: string };
          } catch {
            // Not JSON: expectStatus shows `text`.
          }
          return { status: res.status, text, json };
        };
        const register = async (url: string) => {
          const res = await request('POST', '/api/webhooks', { Url: url, Events: ['webhook.ping'] });
          expectStatus(res, 201);
          return res.json.Id;
        };
        const ping = async (id: string) => expectStatus(await request('POST', `/api/webhooks/${id}/ping`), 202);
        const a = await register(slow[0]!.state.url);
        const b = await register(slow[1]!.state.url);
        const c = await register(fast.url);

        await ping(a);
        await ping(b);
        await waitUntil(
          () => slow.every((r) => r.state.total === 1),
          10_000,
          () => 'both slots busy',
        );
        await ping(c); // wakes the dispatcher while it has no room
        expectStatus(await request('GET', `/api/webhooks/${c}`), 200, 'the process still answers');
        assert.equal(fast.received.length, 0, 'no slot for the new delivery yet');
        const opened = Date.now();
        open();
        const [got] = await fast.waitFor(1, 10_000);
        assert.ok(got!.receivedAt >= opened, 'the new delivery went out once a slot freed');
        await waitUntil(
          () => slow.every((r) => r.state.answeredAt.length === 1),
          10_000,
          () => 'both slow deliveries answered',
        );
      } finally {
        await Promise.all([...children].map((d) => kill(d, 'SIGTERM')));
        await Promise.all(slow.map((r) => r.close()));
        await fast.close();
        await database.drop();
      }
    });
  });
}

if (testDialects().includes('postgres')) {
  describe('signet dispatcher scale-out [postgres]', () => {
    test('three dispatchers on one PostgreSQL deliver 2,000 deliveries each at least once and never one delivery twice at the same time', async () => {
      const ENDPOINTS = 4;
      const ORDERS = 500; // × 4 endpoints = 2,000 deliveries
      const api = await startApi('postgres');
      const receiver = await startCountingReceiver(5);
      const createOrders = async (n: number) => {
        for (let i = 0; i < n; i += 50)
          await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => createOrder(api.server, api.token)));
      };
      try {
        for (let e = 0; e < ENDPOINTS; e++)
          await registerEndpoint(api.server, api.token, `${receiver.state.url}/hook/${e}`, ['order.created']);
        // Half of them wait before any dispatcher runs (all three claim from one backlog at once), half
        // are committed while they run (NOTIFY wakes all three for each).
        await createOrders(ORDERS / 2);
        // Each process names its headers differently, so the receiver can tell who sent what.
        await Promise.all(
          ['One', 'Two', 'Three'].map((name) => startDispatcher(api.database.url, { WEBHOOK_HEADER_NAME: name })),
        );
        await createOrders(ORDERS / 2);

        const db = api.server.app.database.db;
        const countWhere = async (state?: 'succeeded') => {
          let query = db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n'));
          if (state) query = query.where('state', '=', state);
          return Number((await query.executeTakeFirstOrThrow()).n);
        };
        const total = ORDERS * ENDPOINTS;
        assert.equal(await countWhere(), total, 'one delivery per order.created event and endpoint');
        await waitUntil(
          async () => (await countWhere('succeeded')) === total,
          45_000,
          () => `all succeeded; received ${receiver.state.seen.size} distinct`,
        );

        const ids = (await db.selectFrom('webhook_deliveries').select('id').execute()).map((r) => r.id);
        assert.deepEqual(
          [...receiver.state.seen.keys()].sort(),
          ids.sort(),
          'every delivery arrived, and nothing else',
        );
        assert.deepEqual(receiver.state.overlaps, [], 'no delivery was ever in flight twice at once');
        const attempts = Number(
          (
            await db
              .selectFrom('webhook_attempts')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
        assert.equal(attempts, receiver.state.total, 'every request the receiver answered is in the attempt log');
        assert.deepEqual(
          [...receiver.state.byDispatcher.keys()].sort(),
          ['x-one-delivery', 'x-three-delivery', 'x-two-delivery'],
          `all three dispatchers took part: ${JSON.stringify([...receiver.state.byDispatcher])}`,
        );
      } finally {
        await Promise.all([...children].map((d) => kill(d, 'SIGTERM')));
        await receiver.close();
        await api.close();
      }
    });

    test('LISTEN/NOTIFY wakes a dispatcher in another process at once: a new order arrives within 5 s although it polls every 60 s', async () => {
      const api = await startApi('postgres');
      const receiver = await startReceiver();
      const appName = `signet-listen-${process.pid}-${Date.now()}`;
      const admin = new pg.Client({ connectionString: api.database.url });
      await admin.connect();
      try {
        await registerEndpoint(api.server, api.token, receiver.url, ['order.created']);
        await startDispatcher(api.database.url, { WEBHOOK_POLL_INTERVAL: '60s', PGAPPNAME: appName });
        // The dispatcher's LISTEN connection is up (it names itself through PGAPPNAME).
        await waitUntil(
          async () =>
            (
              await admin.query(
                `select 1 from pg_stat_activity where application_name = $1 and query ilike 'LISTEN %'`,
                [appName],
              )
            ).rowCount === 1,
          10_000,
          () => 'the dispatcher LISTENs',
        );
        for (let n = 1; n <= 2; n++) {
          await createOrder(api.server, api.token);
          const got = await receiver.waitFor(n, 5000);
          const deliveryId = String(got[n - 1]!.headers['x-service-delivery']);
          await waitUntil(
            async () =>
              (await call(api.server.url, 'GET', `/api/webhooks/deliveries/${deliveryId}`, { token: api.token })).json
                .State === 'succeeded',
            5000,
            () => `${deliveryId} recorded`,
          );
        }
        assert.equal(receiver.received.length, 2);
        assert.deepEqual(
          receiver.received.map((r) => (JSON.parse(r.body) as { Type: string }).Type),
          ['order.created', 'order.created'],
        );
      } finally {
        await Promise.all([...children].map((d) => kill(d, 'SIGTERM')));
        await admin.end();
        await receiver.close();
        await api.close();
      }
    });
  });
}
