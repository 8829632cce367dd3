// A request cut by a lost database connection does not keep its Idempotency-Key
// (docs/guides/calling-the-api.md, "Idempotency-Key"): its 503's Retry-After is a wait after which the
// retry with the same key runs, and runs once. Every keyed write (the create and each action) is held
// on a table lock inside its transaction, its connection is then lost (backends terminated as by an
// administrator or a failover, or every connection dropped and new ones refused, as by a firewall or a
// database host going away), and the test follows each 503's Retry-After. PostgreSQL only: SQLite has no
// connection to lose, and claims its key in the write's own transaction.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';

/** Longer than the 5 s of a plain outage's Retry-After: a client told 5 s would come back too early. */
const LOCK_SECONDS = 8;
/** How long a write may wait for the table lock: the test holds it until the fault. */
const DATABASE_TIMEOUTS = { DATABASE_LOCK_TIMEOUT: '60s', DATABASE_STATEMENT_TIMEOUT: '60s' };
/** Waits on the database or the answers: generous, only a hang reaches them. */
const WAIT_MS = 20_000;

interface Write {
  name: string;
  path: string;
  body?: unknown;
  /** What the retry's success looks like. */
  status: number;
  /** The order the write acts on (undefined for the create). */
  orderId?: number;
  expectedStatus: string;
  key: string;
}

interface Answer {
  write: Write;
  result: CallResult;
  receivedAt: number;
}

if (testDialects().includes('postgres'))
  describe('an Idempotency-Key whose request lost its database connection [postgres]', () => {
    const appName = `signet-idem-${randomBytes(4).toString('hex')}`;
    let proxy: TcpProxy;
    let server: TestServer;
    let admin: pg.Client;
    let token: string;

    before(async () => {
      proxy = new TcpProxy({ host: '127.0.0.1', port: 5432 });
      await proxy.start();
      server = await startServer(
        'postgres',
        { ...DATABASE_TIMEOUTS, IDEMPOTENCY_LOCK_SECONDS: String(LOCK_SECONDS) },
        undefined,
        {
          databaseUrl: (url) => {
            const proxied = new URL(proxy.rewrite(url));
            proxied.searchParams.set('application_name', appName);
            return proxied.toString();
          },
        },
      );
      admin = new pg.Client({ connectionString: server.databaseUrl });
      await admin.connect();
      token = await server.issuer.clientToken('orders:read orders:write');
    });
    after(async () => {
      await admin?.end();
      await proxy?.close();
      await server?.close();
    });

    /** An order moved to `status` along the state machine, without keys. */
    async function orderIn(status: 'pending' | 'paid' | 'shipped'): Promise<number> {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 5 },
      });
      assert.equal(created.status, 201, created.text);
      const id = Number(created.json.Id);
      for (const action of { pending: [], paid: ['pay'], shipped: ['pay', 'ship'] }[status]) {
        const moved = await call(server.url, 'POST', `/api/orders/${id}/${action}`, { token });
        assert.equal(moved.status, 200, moved.text);
      }
      return id;
    }

    /** The create and every action, each with a fresh key, on an order in the state it needs. */
    async function keyedWrites(): Promise<Write[]> {
      const key = () => `lost-${randomBytes(8).toString('hex')}`;
      const customer = randomUUID();
      const writes: Write[] = [
        {
          name: 'create',
          path: '/api/orders',
          body: { CustomerId: customer, Total: 12 },
          status: 201,
          expectedStatus: 'pending',
          key: key(),
        },
      ];
      const actions = [
        ['pay', 'pending', 'paid'],
        ['cancel', 'pending', 'cancelled'],
        ['ship', 'paid', 'shipped'],
        ['deliver', 'shipped', 'delivered'],
      ] as const;
      for (const [action, from, to] of actions) {
        const orderId = await orderIn(from);
        writes.push({
          name: action,
          path: `/api/orders/${orderId}/${action}`,
          status: 200,
          orderId,
          expectedStatus: to,
          key: key(),
        });
      }
      return writes;
    }

    const send = (write: Write) =>
      call(server.url, 'POST', write.path, {
        token,
        body: write.body,
        headers: { 'idempotency-key': write.key },
        signal: AbortSignal.timeout(WAIT_MS * 2),
      });

    async function backendsWaitingOnLocks(): Promise<number> {
      const { rows } = await admin.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'`,
        [appName],
      );
      return rows[0]!.n;
    }

    async function keyRows(writes: Write[]): Promise<Map<string, { state: string; locked_until: Date }>> {
      const { rows } = await admin.query<{ key: string; state: string; locked_until: Date }>(
        'select "key", state, locked_until from idempotency_keys where "key" = any($1::text[])',
        [writes.map((w) => w.key)],
      );
      return new Map(rows.map((row) => [row.key, row]));
    }

    /**
     * Sends every write while `orders` is locked, waits until each waits on the lock inside its
     * transaction (its key claimed, for the actions), runs `fault`, lifts the lock, and returns the answers.
     */
    async function cutWhileWriting(writes: Write[], fault: () => Promise<void>): Promise<Answer[]> {
      // On a connection of its own: pg_stat_activity is read once per transaction, so the polls below
      // must not run inside this one.
      const holder = new pg.Client({ connectionString: server.databaseUrl });
      await holder.connect();
      await holder.query('begin');
      await holder.query('lock table orders in exclusive mode');
      let answers: Promise<Answer>[];
      try {
        answers = writes.map((write) => send(write).then((result) => ({ write, result, receivedAt: Date.now() })));
        let waiting = 0;
        await waitUntil(
          async () => (waiting = await backendsWaitingOnLocks()) === writes.length,
          WAIT_MS,
          () => `${waiting} of ${writes.length} writes waiting on the table lock`,
        );
        await fault();
      } finally {
        await holder.query('rollback');
        await holder.end();
      }
      return Promise.all(answers);
    }

    function describeAnswers(answers: Answer[]): string {
      return answers
        .map(
          (a) =>
            `${a.write.name}: ${a.result.status} retry-after=${a.result.headers.get('retry-after')} ${a.result.text.slice(0, 200)}`,
        )
        .join('\n');
    }

    /**
     * Each answer is a 503 whose Retry-After covers whatever is left of its key's claim; the retry sent
     * once it has passed runs the write (no 409), and a second retry replays it: one effect per key.
     */
    async function assertRetriesSucceedOnce(answers: Answer[]): Promise<void> {
      const writes = answers.map((a) => a.write);
      const keys = await keyRows(writes);
      for (const { write, result, receivedAt } of answers) {
        assert.equal(result.status, 503, `${write.name} was cut: ${describeAnswers(answers)}`);
        const retryAfter = Number(result.headers.get('retry-after'));
        assert.ok(retryAfter >= 1, `${write.name}: Retry-After ${result.headers.get('retry-after')}`);
        const row = keys.get(write.key);
        if (row?.state === 'in_flight')
          assert.ok(
            receivedAt + retryAfter * 1000 >= row.locked_until.getTime(),
            `${write.name}: Retry-After ${retryAfter} s ends before its key's claim does (locked until ${row.locked_until.toISOString()}, answered at ${new Date(receivedAt).toISOString()})`,
          );
      }
      for (const { write, result, receivedAt } of answers) {
        const retryAt = receivedAt + Number(result.headers.get('retry-after')) * 1000;
        // As a client does: nothing is sent before the time Retry-After names.
        await waitUntil(
          () => Date.now() >= retryAt,
          WAIT_MS,
          () => `the Retry-After of ${write.name}`,
        );
        const retried = await send(write);
        assert.equal(
          retried.status,
          write.status,
          `${write.name} retried after Retry-After: ${retried.status} ${retried.text}; key rows ${JSON.stringify([...(await keyRows([write])).values()])}`,
        );
        assert.equal(retried.json.Status, write.expectedStatus, retried.text);
        const replayed = await send(write);
        assert.equal(replayed.status, write.status, replayed.text);
        assert.equal(
          replayed.headers.get('idempotent-replayed'),
          'true',
          `${write.name}: the second retry is a replay`,
        );
        assert.equal(replayed.json.Id, retried.json.Id);
        if (write.orderId === undefined) {
          const customer = (write.body as { CustomerId: string }).CustomerId;
          const { rows } = await admin.query<{ n: number }>(
            'select count(*)::int as n from orders where customer_id = $1',
            [customer],
          );
          assert.equal(rows[0]!.n, 1, `one order created for key ${write.key}`);
        }
      }
    }

    test('backends terminated mid-transaction: the keys are released on another connection, and each retry runs once', async () => {
      const writes = await keyedWrites();
      const answers = await cutWhileWriting(writes, async () => {
        await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [
          appName,
        ]);
      });
      const held = [...(await keyRows(writes)).entries()].filter(([, row]) => row.state === 'in_flight');
      assert.deepEqual(held, [], `no key is left claimed after its 503:\n${describeAnswers(answers)}`);
      await assertRetriesSucceedOnce(answers);
    });

    test('the database unreachable until after the answers: each 503 says the time until its claim ends, and the retry then runs once', async () => {
      const writes = await keyedWrites();
      const answers = await cutWhileWriting(writes, () => proxy.cut()).finally(() => proxy.start());
      await assertRetriesSucceedOnce(answers);
    });
  });
