// The dispatcher's batched SQL (src/webhooks/store/dispatch.repository.ts) against a real database: which due
// deliveries a claim takes (oldest first, within the endpoint limits, never one leased elsewhere), what
// a batch of outcomes writes (only under its own lease), and that a dispatcher draining a backlog
// claims in batches rather than once per delivery. Both dialects.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { toDbTime } from '../../src/db/codecs.ts';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import {
  claimBatch,
  recordOutcomes,
  type ClaimRequest,
  type Outcome,
} from '../../src/webhooks/store/dispatch.repository.ts';
import { CallbackClient, type AttemptResult } from '../../src/webhooks/delivery/callback-client.ts';
import { Dispatcher } from '../../src/webhooks/delivery/dispatcher.ts';
import { Outbox } from '../../src/webhooks/outbox/events.outbox.ts';
import { AddressPolicy } from '../../src/webhooks/delivery/address-policy.ts';
import { SecretBox } from '../../src/webhooks/store/secrets.ts';
import { seedEndpoint } from '../helpers/webhook-seed.ts';
import { testDialects, type TestDatabase } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';

const T0 = new Date('2026-11-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const box = new SecretBox(randomBytes(32));

const OK: AttemptResult = {
  ok: true,
  statusCode: 200,
  durationMs: 3,
  errorKind: null,
  errorDetail: null,
  responseExcerpt: 'fine',
  retryAfterMs: undefined,
  gone: false,
};

for (const dialect of testDialects()) {
  describe(`dispatcher SQL [${dialect}]`, () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;

    useMigratedDatabase(dialect, (opened, created) => {
      handle = opened;
      database = created;
    });
    beforeEach(async () => {
      await handle.db.deleteFrom('webhook_endpoints').execute(); // deliveries and attempts cascade
      await handle.db.deleteFrom('webhook_events').execute();
    });

    async function addEndpoint(id: string, url = 'https://receiver.example/hook'): Promise<void> {
      const secret = box.seal(id, `whsec_${randomBytes(32).toString('base64')}`);
      await seedEndpoint(handle.db, { id, url, secret, at: T0 });
    }

    /** One event and its delivery to `endpointId`, due at T0 + dueMs. Returns the delivery id. */
    async function addDelivery(
      endpointId: string,
      dueMs: number,
      lease?: { owner: string; until: Date },
    ): Promise<string> {
      const eventId = `evt_${randomBytes(8).toString('hex')}`;
      const id = `dlv_${randomBytes(8).toString('hex')}`;
      await handle.db
        .insertInto('webhook_events')
        .values({
          id: eventId,
          type: 'order.created',
          occurred_at: toDbTime(at(dueMs)),
          data: '{"Id":1}',
          owner: null,
          customer_id: null,
          order_id: null,
        })
        .execute();
      await handle.db
        .insertInto('webhook_deliveries')
        .values({
          id,
          event_id: eventId,
          endpoint_id: endpointId,
          state: 'pending',
          attempt_count: 0,
          retry_index: 0,
          next_attempt_at: toDbTime(at(dueMs)),
          lease_owner: lease?.owner ?? null,
          lease_until: lease ? toDbTime(lease.until) : null,
          last_status_code: null,
          last_error: null,
          created_at: toDbTime(at(dueMs)),
          updated_at: toDbTime(at(dueMs)),
        })
        .execute();
      return id;
    }

    function claim(overrides: Partial<ClaimRequest> = {}) {
      const request: ClaimRequest = {
        now: at(60_000),
        leaseUntil: at(85_000),
        leaseToken: randomBytes(6).toString('hex'),
        limit: 64,
        endpointLimit: 16,
        inFlight: new Map(),
        ...overrides,
      };
      return claimBatch(handle.db, handle.dialect, request);
    }

    async function row(id: string) {
      return handle.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    }

    test('a claim takes due, free deliveries oldest first, up to its limit, with what sending needs', async () => {
      await addEndpoint('whep_a', 'https://a.example/hook');
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push(await addDelivery('whep_a', 1000 * (5 - i))); // created newest first
      const notYetDue = await addDelivery('whep_a', 120_000);
      const claimed = await claim({ limit: 3 });
      assert.deepEqual(
        claimed.map((d) => d.id),
        [ids[4], ids[3], ids[2]],
        'the three oldest, oldest first',
      );
      const first = claimed[0]!;
      assert.equal(first.url, 'https://a.example/hook');
      assert.equal(first.dataJson, '{"Id":1}');
      assert.equal(first.eventType, 'order.created');
      assert.equal(first.attemptCount, 0);
      assert.ok(box.open('whep_a', first.sealedSecret).startsWith('whsec_'));
      const rest = await claim();
      assert.deepEqual(
        rest.map((d) => d.id).sort(),
        [ids[0], ids[1]].sort(),
        'leased ones are not taken again; the future one waits',
      );
      assert.equal((await row(notYetDue)).lease_owner, null);
    });

    test('a lease held elsewhere is skipped until it expires, then the delivery is claimed again', async () => {
      await addEndpoint('whep_a');
      const held = await addDelivery('whep_a', 0, { owner: 'other-dispatcher', until: at(70_000) });
      assert.deepEqual(await claim({ now: at(60_000) }), []);
      const after = await claim({ now: at(70_001), leaseToken: 'mine' });
      assert.deepEqual(
        after.map((d) => d.id),
        [held],
      );
      assert.equal((await row(held)).lease_owner, 'mine');
    });

    test('the claim keeps within each endpoint limit, counting what is already in flight', async () => {
      await addEndpoint('whep_a');
      await addEndpoint('whep_b');
      for (let i = 0; i < 20; i++) await addDelivery('whep_a', i); // A's are all older than B's
      for (let i = 0; i < 20; i++) await addDelivery('whep_b', 100 + i);
      const claimed = await claim({ limit: 10, endpointLimit: 16, inFlight: new Map([['whep_a', 14]]) });
      const perEndpoint = (endpoint: string) => claimed.filter((d) => d.endpointId === endpoint).length;
      assert.equal(perEndpoint('whep_a'), 2, 'A had 14 of its 16 in flight');
      assert.equal(perEndpoint('whep_b'), 8, 'the rest of the room goes to B');
      const saturated = await claim({ limit: 10, inFlight: new Map([['whep_a', 16]]) });
      assert.ok(
        saturated.length > 0 && saturated.every((d) => d.endpointId === 'whep_b'),
        'an endpoint at its limit gets nothing',
      );
      const single = await claim({ limit: 64, inFlight: new Map() });
      assert.equal(
        single.filter((d) => d.endpointId === 'whep_a').length,
        16,
        'one endpoint never gets more than its limit, however much room there is',
      );
    });

    test('concurrent claims never take the same delivery', async () => {
      await addEndpoint('whep_a');
      await addEndpoint('whep_b');
      for (let i = 0; i < 60; i++) await addDelivery(i % 2 ? 'whep_a' : 'whep_b', i);
      const batches = await Promise.all(Array.from({ length: 6 }, () => claim({ limit: 12, endpointLimit: 60 })));
      const all = [...batches.flat(), ...(await claim({ limit: 60, endpointLimit: 60 }))].map((d) => d.id);
      assert.equal(new Set(all).size, all.length, 'no delivery in two claims');
      assert.equal(all.length, 60, 'and everything was claimed once');
    });

    test('a batch of outcomes moves each delivery on under its own lease, logs every attempt, and skips deleted ones', async () => {
      await addEndpoint('whep_a');
      await addEndpoint('whep_gone');
      const succeeded = await addDelivery('whep_a', 0);
      const retried = await addDelivery('whep_a', 1);
      const [mine] = await claim({ leaseToken: 'mine', limit: 2 }).then((c) => c.map((d) => d.id));
      assert.equal(mine, succeeded);
      // `retried` was claimed by another dispatcher meanwhile: its outcome from us must not move it.
      await handle.db
        .updateTable('webhook_deliveries')
        .set({ lease_owner: 'theirs', lease_until: toDbTime(at(90_000)) })
        .where('id', '=', retried)
        .execute();
      const deleted = await addDelivery('whep_gone', 2);
      const outcome = (
        deliveryId: string,
        endpointId: string,
        leaseToken: string,
        state: Outcome['state'],
        result: AttemptResult,
      ): Outcome => ({
        deliveryId,
        endpointId,
        leaseToken,
        attempt: 1,
        startedAt: at(60_000),
        result,
        state,
        retryIndex: state === 'pending' ? 1 : 0,
        nextAttemptAt: at(65_000),
      });
      const failure: AttemptResult = {
        ...OK,
        ok: false,
        statusCode: 503,
        errorKind: 'status',
        errorDetail: 'HTTP 503',
        responseExcerpt: 'busy',
      };
      await handle.db.deleteFrom('webhook_endpoints').where('id', '=', 'whep_gone').execute();
      await handle.db
        .transaction()
        .execute((trx) =>
          recordOutcomes(
            trx,
            handle.dialect,
            [
              outcome(succeeded, 'whep_a', 'mine', 'succeeded', OK),
              outcome(retried, 'whep_a', 'mine', 'pending', failure),
              outcome(deleted, 'whep_gone', 'mine', 'succeeded', OK),
            ],
            at(61_000),
          ),
        );
      const done = await row(succeeded);
      assert.equal(done.state, 'succeeded');
      assert.equal(Number(done.attempt_count), 1);
      assert.equal(done.lease_owner, null);
      assert.equal(Number(done.last_status_code), 200);
      const theirs = await row(retried);
      assert.equal(theirs.state, 'pending');
      assert.equal(theirs.lease_owner, 'theirs', 'the lease we lost is left to its holder');
      assert.equal(Number(theirs.attempt_count), 0);
      const attempts = await handle.db.selectFrom('webhook_attempts').selectAll().orderBy('status_code').execute();
      assert.deepEqual(
        attempts.map((a) => [a.delivery_id, Number(a.status_code), a.response_excerpt]),
        [
          [succeeded, 200, 'fine'],
          [retried, 503, 'busy'],
        ],
        'both attempts happened and are logged; the deleted delivery logs nothing',
      );
    });

    test('a dispatcher draining a backlog claims in batches, not once per delivery', async () => {
      const receiver = await startReceiver();
      const endpointConcurrency = 16;
      const client = new CallbackClient({
        timeoutMs: 5000,
        connectionsPerOrigin: endpointConcurrency,
        policy: new AddressPolicy(['loopback']),
        userAgent: 'test',
      });
      // Count the claim statements (the UPDATE that sets a lease) on the dispatcher's own connection.
      let claims = 0;
      const counting = openDatabase(database.url);
      const db = counting.db.withPlugin({
        transformQuery(args) {
          if (args.node.kind === 'RawNode' && args.node.sqlFragments.join('').includes('set lease_owner =')) claims++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      let dispatcher: Dispatcher | undefined;
      try {
        await addEndpoint('whep_a', `${receiver.url}/hook`);
        const total = 120;
        // The receiver answers a whole window of requests at once (the last one when everything has
        // arrived), so slots free together as they do under load, and the count below never depends on
        // how fast this machine happens to be: ideally 4 deliveries per claim (a quarter of the share).
        let held: (() => void)[] = [];
        receiver.answer = () =>
          new Promise((resolve) => {
            held.push(() => resolve({ status: 200 }));
            if (held.length < endpointConcurrency && receiver.received.length < total) return;
            const window = held;
            held = [];
            for (const release of window) release();
          });
        for (let i = 0; i < total; i++) await addDelivery('whep_a', -60_000 + i);
        dispatcher = new Dispatcher({
          db,
          dialect: counting.dialect,
          box,
          outbox: new Outbox(counting.dialect, () => undefined),
          client,
          log: pino({ level: 'silent' }),
          settings: {
            concurrency: 64,
            endpointConcurrency,
            pollIntervalMs: 60_000,
            timeoutMs: 5000,
            retry: { scheduleMs: [0], retryAfterCapMs: 0 },
            disableAfterMs: 86_400_000,
            headerName: 'Service',
            retentionMs: 86_400_000 * 30,
          },
        });
        dispatcher.start();
        await receiver.waitFor(total, 20_000);
        const ids = receiver.received.map((r) => r.headers['x-service-delivery']);
        assert.equal(new Set(ids).size, total, 'each delivery arrived once');
        assert.ok(
          claims <= total / 2,
          `${claims} claims for ${total} deliveries: freed slots are gathered into one claim`,
        );
      } finally {
        await dispatcher?.stop(1000);
        await client.close();
        await receiver.close();
        await counting.db.destroy();
      }
    });

    test('a failed claim is tried again within a second, not at the next (minute-long) poll', async () => {
      const receiver = await startReceiver();
      const client = new CallbackClient({
        timeoutMs: 5000,
        connectionsPerOrigin: 4,
        policy: new AddressPolicy(['loopback']),
        userAgent: 'test',
      });
      // The first claim statement fails, as it does when the connection is lost under it.
      let failed = false;
      const db = handle.db.withPlugin({
        transformQuery(args) {
          if (
            !failed &&
            args.node.kind === 'RawNode' &&
            args.node.sqlFragments.join('').includes('set lease_owner =')
          ) {
            failed = true;
            throw new Error('connection lost (simulated before the statement is sent)');
          }
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      let dispatcher: Dispatcher | undefined;
      try {
        await addEndpoint('whep_a', `${receiver.url}/hook`);
        await addDelivery('whep_a', -60_000);
        dispatcher = new Dispatcher({
          db,
          dialect: handle.dialect,
          box,
          outbox: new Outbox(handle.dialect, () => undefined),
          client,
          log: pino({ level: 'silent' }),
          settings: {
            concurrency: 4,
            endpointConcurrency: 4,
            pollIntervalMs: 60_000,
            timeoutMs: 5000,
            retry: { scheduleMs: [0], retryAfterCapMs: 0 },
            disableAfterMs: 86_400_000,
            headerName: 'Service',
            retentionMs: 86_400_000 * 30,
          },
        });
        dispatcher.start();
        await receiver.waitFor(1, 15_000);
        assert.ok(failed, 'the first claim failed');
      } finally {
        await dispatcher?.stop(1000);
        await client.close();
        await receiver.close();
      }
    });

    test("an idle dispatcher wakes when a lost claim's lease expires, not only at the next poll", async () => {
      // A claim whose outcome was never recorded (the connection was lost) leaves its delivery leased;
      // nothing else will wake the dispatcher when the lease ends, and the poll here is a minute long.
      const receiver = await startReceiver();
      const client = new CallbackClient({
        timeoutMs: 5000,
        connectionsPerOrigin: 4,
        policy: new AddressPolicy(['loopback']),
        userAgent: 'test',
      });
      let dispatcher: Dispatcher | undefined;
      try {
        await addEndpoint('whep_a', `${receiver.url}/hook`);
        const leaseEnds = new Date(Date.now() + 1500);
        const id = await addDelivery('whep_a', -60_000, { owner: 'a-lost-claim', until: leaseEnds });
        dispatcher = new Dispatcher({
          db: handle.db,
          dialect: handle.dialect,
          box,
          outbox: new Outbox(handle.dialect, () => undefined),
          client,
          log: pino({ level: 'silent' }),
          settings: {
            concurrency: 4,
            endpointConcurrency: 4,
            pollIntervalMs: 60_000,
            timeoutMs: 5000,
            retry: { scheduleMs: [0], retryAfterCapMs: 0 },
            disableAfterMs: 86_400_000,
            headerName: 'Service',
            retentionMs: 86_400_000 * 30,
          },
        });
        dispatcher.start();
        await receiver.waitFor(1, 15_000);
        assert.equal(receiver.received[0]!.headers['x-service-delivery'], id);
        assert.ok(Date.now() >= leaseEnds.getTime(), 'not before the lease ended');
      } finally {
        await dispatcher?.stop(1000);
        await client.close();
        await receiver.close();
      }
    });
  });
}
