// PostgreSQL: POST /api/orders in one statement (docs/operations/postgresql.md): the order's id (shared with the
// creates running at the same time), then one autocommit statement with the key's claim, the order, its history, its
// event and deliveries, the NOTIFY and the stored response (WriteUnit, src/idempotency/idempotency-statement.ts). Counts
// the queries each request sends, and proves the statement's gate: a duplicate waits for the first
// statement and replays it, a key held by another request writes nothing, a failed statement leaves no key.
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { PostgresQueryCompiler, sql } from 'kysely';
import pg from 'pg';
import { toDbTime } from '../../src/db/codecs.ts';
import { requestFingerprint } from '../../src/idempotency/idempotency.ts';
import type { Db } from '../../src/db/database.ts';
import { seedEndpoint } from '../helpers/webhook-seed.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';

/** The SQL each request sent, by the x-test-request header it carried. */
const sentBy = new Map<string, string[]>();
const current = new AsyncLocalStorage<string[]>();

/** Runs once, when the next write statement of a create has answered, before the create sees the answer. */
let afterWriteStatement: (() => Promise<unknown>) | undefined;

/** Counts pg queries in the async context of the request that sent them (not the dispatcher's, nor other tests'). */
function countQueries(server: TestServer): () => void {
  const query = pg.Client.prototype.query;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- passes pg's many overloads through
  pg.Client.prototype.query = function (this: pg.Client, ...args: any[]): any {
    const first: unknown = args[0];
    const text = typeof first === 'string' ? first : String((first as { text?: string }).text);
    current.getStore()?.push(text);
    const answer = (query as (...a: unknown[]) => unknown).apply(this, args);
    const hook = afterWriteStatement;
    if (!hook || !text.includes('idempotency_gate') || !(answer instanceof Promise)) return answer;
    afterWriteStatement = undefined;
    return answer.then(async (result: unknown) => {
      await hook();
      return result;
    });
  } as typeof query;
  const http = server.app.server;
  const [handler] = http.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  assert.ok(handler, 'the app server has a request listener');
  http.removeListener('request', handler);
  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const log: string[] = [];
    sentBy.set(String(req.headers['x-test-request']), log);
    current.run(log, () => handler(req, res));
  });
  return () => {
    pg.Client.prototype.query = query;
  };
}

function oneLine(statements: string[]): string {
  return statements.map((s, i) => `${i + 1}. ${s.replace(/\s+/g, ' ').slice(0, 160)}`).join('\n');
}

for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe(`POST /api/orders in one statement [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    let db: Db;
    let restore = () => undefined as void;
    before(async () => {
      ({ server, token } = await startWithClientToken(dialect, { WEBHOOK_DISPATCHER: 'false' }));
      db = server.app.database.db;
      restore = countQueries(server);
    });
    after(async () => {
      restore();
      await server.close();
    });

    const create = async (customerId: string, key?: string) => {
      const id = randomUUID();
      const headers: Record<string, string> = { 'x-test-request': id };
      if (key !== undefined) headers['idempotency-key'] = key;
      const res = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: customerId, Total: 12.5, Currency: 'EUR' },
        headers,
      });
      return { res, sent: sentBy.get(id) ?? [] };
    };

    async function insertEndpoint(eventTypes: string[]): Promise<string> {
      const id = `whep_${randomUUID().replace(/-/g, '')}`;
      await seedEndpoint(db, {
        id,
        url: 'https://receiver.example/hook',
        eventTypes,
        secret: 'not used: the dispatcher is off',
      });
      return id;
    }

    const rowsOf = async (customerId: string) => ({
      orders: await db.selectFrom('orders').select(['id', 'status']).where('customer_id', '=', customerId).execute(),
      events: await db
        .selectFrom('webhook_events')
        .select(['id', 'type', 'order_id', 'data'])
        .where('customer_id', '=', customerId)
        .execute(),
    });

    test("a fresh create with a key is its id and one statement, which claims the key and writes the order, its history, its event, one delivery per subscriber and the key's answer", async () => {
      const everything = await insertEndpoint(['*']);
      const created = await insertEndpoint(['order.created']);
      await insertEndpoint(['order.paid']); // not subscribed to order.created: no delivery
      const customer = randomUUID();
      const key = `k-${randomUUID()}`;
      const { res, sent } = await create(customer, key);
      expectStatus(res, 201);
      assert.equal(sent.length, 2, `queries sent:\n${oneLine(sent)}`);
      assert.match(sent[0] ?? '', /nextval.*generate_series/s, `the id comes first:\n${oneLine(sent)}`);
      assert.match(sent[1] ?? '', /insert into idempotency_keys/, 'the key is claimed by the write');
      assert.match(sent[1] ?? '', /pg_notify/, 'the NOTIFY goes with the write');
      const keyRow = await db.selectFrom('idempotency_keys').select('state').where('key', '=', key).execute();
      assert.deepEqual(keyRow, [{ state: 'done' }]);

      const { orders, events } = await rowsOf(customer);
      assert.deepEqual(orders, [{ id: res.json.Id, status: 'pending' }]);
      const history = await db
        .selectFrom('order_status_changes')
        .select('status')
        .where('order_id', '=', res.json.Id)
        .execute();
      assert.deepEqual(history, [{ status: 'pending' }]);
      assert.equal(events.length, 1, JSON.stringify(events));
      const [event] = events;
      assert.equal(event?.type, 'order.created');
      assert.equal(Number(event?.order_id), res.json.Id);
      assert.deepEqual(
        JSON.parse(event?.data ?? 'null'),
        res.json,
        "the event's Data is the order as the response shows it",
      );
      const deliveries = await db
        .selectFrom('webhook_deliveries')
        .select(['id', 'endpoint_id', 'state', 'attempt_count'])
        .where('event_id', '=', event?.id ?? '')
        .execute();
      assert.deepEqual(
        deliveries.map((d) => d.endpoint_id).sort(),
        [everything, created].sort(),
        JSON.stringify(deliveries),
      );
      for (const d of deliveries) {
        assert.match(d.id, /^dlv_[0-9a-f]{32}$/);
        assert.equal(d.state, 'pending');
        assert.equal(d.attempt_count, 0);
      }

      const replay = await create(customer, key);
      expectStatus(replay.res, 201);
      assert.equal(replay.res.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.res.text, res.text, 'replayed byte for byte');
      assert.equal((await rowsOf(customer)).orders.length, 1);
    });

    test('a create without a key is two queries too, and the ids it takes keep growing', async () => {
      const customer = randomUUID();
      const first = await create(customer);
      const second = await create(customer);
      expectStatus(first.res, 201);
      expectStatus(second.res, 201);
      assert.equal(first.sent.length, 2, `queries sent:\n${oneLine(first.sent)}`);
      assert.ok(second.res.json.Id > first.res.json.Id, `${second.res.json.Id} after ${first.res.json.Id}`);
      assert.equal((await rowsOf(customer)).orders.length, 2);
    });

    test('the write statement is built and compiled once: a later create compiles only its id fetch', async () => {
      const compileQuery = PostgresQueryCompiler.prototype.compileQuery;
      const compiled: string[] = [];
      PostgresQueryCompiler.prototype.compileQuery = function (this: PostgresQueryCompiler, ...args) {
        const query = compileQuery.apply(this, args);
        if (current.getStore()) compiled.push(query.sql);
        return query;
      };
      try {
        expectStatus((await create(randomUUID(), `k-${randomUUID()}`)).res, 201); // may be the first of its shape
        compiled.length = 0;
        const { res, sent } = await create(randomUUID(), `k-${randomUUID()}`);
        expectStatus(res, 201);
        assert.equal(sent.length, 2, `queries sent:\n${oneLine(sent)}`);
        assert.deepEqual(
          compiled.map((text) => (/nextval/.test(text) ? 'the id fetch' : text)),
          ['the id fetch'],
          'compiled during the second create',
        );
      } finally {
        PostgresQueryCompiler.prototype.compileQuery = compileQuery;
      }
    });

    /**
     * Holds an ACCESS EXCLUSIVE lock on webhook_events, so the create's write statement waits for it
     * (PostgreSQL locks every table a statement writes before it writes anything), while `meanwhile` runs.
     */
    async function whileWriteWaits(meanwhile: () => Promise<void>): Promise<void> {
      await db.connection().execute(async (locker) => {
        await sql`begin`.execute(locker);
        try {
          await sql`lock table webhook_events in access exclusive mode`.execute(locker);
          await meanwhile();
        } finally {
          await sql`rollback`.execute(locker);
        }
      });
    }

    const waitingWrites = async () =>
      Number(
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where wait_event_type = 'Lock' and query like '%idempotency_gate%'`.execute(db)
        ).rows[0]?.n,
      );

    /** Starts a create with `key` and waits until its write statement waits for a lock (wrapped: not awaited). */
    async function createWhoseWriteWaits(customer: string, key: string, total = 12.5) {
      const waitingBefore = await waitingWrites();
      const response = call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: customer, Total: total, Currency: 'EUR' },
        headers: { 'idempotency-key': key },
      });
      response.catch(() => undefined); // awaited by the test; not an unhandled rejection meanwhile
      await waitUntil(
        async () => (await waitingWrites()) > waitingBefore,
        5000,
        () => 'the write statement never waited',
      );
      return { response };
    }

    test('a duplicate sent while the first create is in flight is answered with its replay: no 409, no second order', async () => {
      const customer = randomUUID();
      const key = `k-${randomUUID()}`;
      const sent: Array<Promise<Awaited<ReturnType<typeof call>>>> = [];
      await whileWriteWaits(async () => {
        sent.push((await createWhoseWriteWaits(customer, key)).response);
        sent.push((await createWhoseWriteWaits(customer, key)).response);
      });
      const answers = await Promise.all(sent);
      for (const res of answers) expectStatus(res, 201);
      const originals = answers.filter((res) => res.headers.get('idempotent-replayed') === null);
      assert.equal(originals.length, 1, `replayed: ${answers.map((r) => r.headers.get('idempotent-replayed'))}`);
      assert.equal(answers[0]!.text, answers[1]!.text, 'the replay is the original byte for byte');
      const { orders, events } = await rowsOf(customer);
      assert.deepEqual(orders, [{ id: originals[0]!.json.Id, status: 'pending' }]);
      assert.equal(events.length, 1, JSON.stringify(events));
    });

    test('a duplicate with another body sent while the first create is in flight is 409 and writes nothing', async () => {
      const customer = randomUUID();
      const key = `k-${randomUUID()}`;
      const sent: Array<Promise<Awaited<ReturnType<typeof call>>>> = [];
      await whileWriteWaits(async () => {
        sent.push((await createWhoseWriteWaits(customer, key, 10)).response);
        sent.push((await createWhoseWriteWaits(customer, key, 20)).response);
      });
      const answers = await Promise.all(sent);
      const created = answers.filter((res) => res.status === 201);
      const refused = answers.filter((res) => res.status !== 201);
      assert.equal(created.length, 1, `statuses ${answers.map((r) => r.status)}`);
      expectProblem(refused[0]!, 409, 'idempotency-key-reused');
      assert.deepEqual((await rowsOf(customer)).orders, [{ id: created[0]!.json.Id, status: 'pending' }]);
    });

    /** What a request that claims its key on its own (an action) leaves while it runs: a live claim. */
    async function holdKey(customer: string, key: string): Promise<void> {
      const now = Date.now();
      await db
        .insertInto('idempotency_keys')
        .values({
          caller: 'client:test-client',
          key,
          fingerprint: requestFingerprint('POST', '/api/orders', {
            CustomerId: customer,
            Total: 12.5,
            Currency: 'EUR',
          }),
          state: 'in_flight',
          locked_until: toDbTime(new Date(now + 30_000)),
          created_at: toDbTime(new Date(now)),
          expires_at: toDbTime(new Date(now + 86_400_000)),
          response_status: null,
          response_headers: null,
          response_body: null,
        })
        .execute();
    }

    test("a key held by another request's claim writes nothing and answers 409 with the claim's Retry-After", async () => {
      const customer = randomUUID();
      const key = `k-${randomUUID()}`;
      await holdKey(customer, key);
      const { res, sent } = await create(customer, key);
      expectProblem(res, 409, 'idempotency-key-in-flight');
      assert.ok(Number(res.headers.get('retry-after')) >= 29, `Retry-After ${res.headers.get('retry-after')}`);
      assert.match(sent[1] ?? '', /insert into idempotency_keys/, `queries sent:\n${oneLine(sent)}`);
      assert.deepEqual(await rowsOf(customer), { orders: [], events: [] }, 'nothing of the order was written');
      const kept = await db.selectFrom('idempotency_keys').select('state').where('key', '=', key).execute();
      assert.deepEqual(kept, [{ state: 'in_flight' }], "the other request's claim is left alone");
    });

    test('a key its holder releases just after the write statement saw it is claimed, and the write goes out on that claim', async () => {
      const customer = randomUUID();
      const key = `k-${randomUUID()}`;
      await holdKey(customer, key);
      // The holder fails and releases the key between our statement (which found it held) and our claim.
      afterWriteStatement = () =>
        current.exit(() => db.deleteFrom('idempotency_keys').where('key', '=', key).execute()); // not the create's query
      const { res, sent } = await create(customer, key);
      expectStatus(res, 201);
      assert.equal(afterWriteStatement, undefined, 'the release ran');
      assert.equal(sent.length, 4, `queries sent:\n${oneLine(sent)}`);
      assert.match(sent[2] ?? '', /insert into "idempotency_keys"/, `the claim:\n${oneLine(sent)}`);
      assert.match(sent[3] ?? '', /update idempotency_keys/, `the write, on our claim:\n${oneLine(sent)}`);
      const { orders, events } = await rowsOf(customer);
      assert.deepEqual(orders, [{ id: res.json.Id, status: 'pending' }]);
      assert.equal(events.length, 1, JSON.stringify(events));
      const keyRow = await db
        .selectFrom('idempotency_keys')
        .select(['state', 'response_status'])
        .where('key', '=', key)
        .execute();
      assert.deepEqual(keyRow, [{ state: 'done', response_status: 201 }]);
      const replay = await create(customer, key);
      expectStatus(replay.res, 201);
      assert.equal(replay.res.text, res.text, 'replayed byte for byte');
    });

    test('a write statement that fails leaves no claim behind: the same key then creates exactly one order', async () => {
      const customer = randomUUID();
      const key = `k-${randomUUID()}`;
      let failed: Awaited<ReturnType<typeof create>> | undefined;
      // Held past DATABASE_LOCK_TIMEOUT (3 s): the statement fails with 55P03, as a whole.
      await whileWriteWaits(async () => {
        failed = await create(customer, key);
      });
      assert.equal(failed?.res.status, 503, `${failed?.res.status} ${failed?.res.text}`);
      const left = await db.selectFrom('idempotency_keys').select('state').where('key', '=', key).execute();
      assert.deepEqual(left, [], 'no claim is left');
      assert.deepEqual(await rowsOf(customer), { orders: [], events: [] });

      const retried = await create(customer, key);
      expectStatus(retried.res, 201);
      const { orders, events } = await rowsOf(customer);
      assert.equal(orders.length, 1);
      assert.equal(events.length, 1);
    });

    test('a pay, which reads before it writes, still runs in a transaction after its claim', async () => {
      const customer = randomUUID();
      const { res } = await create(customer, `k-${randomUUID()}`);
      expectStatus(res, 201);
      const id = randomUUID();
      const payKey = `k-${randomUUID()}`;
      const paid = await call(server.url, 'POST', `/api/orders/${res.json.Id}/pay`, {
        token,
        headers: { 'idempotency-key': payKey, 'x-test-request': id },
      });
      expectStatus(paid, 200);
      const sent = sentBy.get(id) ?? [];
      assert.match(sent[0] ?? '', /insert into "idempotency_keys"/, `queries sent:\n${oneLine(sent)}`);
      assert.ok(sent.includes('begin') && sent.at(-1) === 'commit', `queries sent:\n${oneLine(sent)}`);
      const history = await db
        .selectFrom('order_status_changes')
        .select('status')
        .where('order_id', '=', res.json.Id)
        .orderBy('id')
        .execute();
      assert.deepEqual(history, [{ status: 'pending' }, { status: 'paid' }]);
    });
  });
}
