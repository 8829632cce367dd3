// Deliveries a process commits go to its own dispatcher already leased (src/webhooks/delivery/hand-off.ts):
// sent without a claim, only once the transaction is durable, never when it rolls back, and back to
// the claim whenever the dispatcher has no room or the lease would not outlast the attempt. On
// PostgreSQL (no after-commit hook) the rows are written unleased and claimed, as before. Real
// database, real dispatcher, real HTTP receiver.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { type DatabaseHandle, type Db } from '../../src/db/database.ts';
import { AddressPolicy } from '../../src/webhooks/delivery/address-policy.ts';
import { CallbackClient } from '../../src/webhooks/delivery/callback-client.ts';
import { Dispatcher, type DispatcherSettings } from '../../src/webhooks/delivery/dispatcher.ts';
import { Outbox } from '../../src/webhooks/outbox/events.outbox.ts';
import { SecretBox } from '../../src/webhooks/store/secrets.ts';
import { seedEndpoint } from '../helpers/webhook-seed.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';
import { startReceiver, waitUntil, type TestReceiver } from '../helpers/webhook-receiver.ts';

const box = new SecretBox(randomBytes(32));
const TIMEOUT_MS = 5000;

for (const dialect of testDialects()) {
  describe(`hand-off of fresh deliveries to the in-process dispatcher [${dialect}]`, () => {
    let handle: DatabaseHandle;
    let receiver: TestReceiver;
    let client: CallbackClient;
    let dispatcher: Dispatcher | undefined;
    let outbox: Outbox;
    /** Lease UPDATEs the claim ran (the hand-off runs none). */
    let claims: number;
    let db: Db;

    useMigratedDatabase(dialect, (opened) => {
      handle = opened;
    });
    beforeEach(async () => {
      await handle.db.deleteFrom('webhook_endpoints').execute(); // deliveries and attempts cascade
      await handle.db.deleteFrom('webhook_events').execute();
      claims = 0;
      db = handle.db.withPlugin({
        transformQuery(args) {
          if (args.node.kind === 'RawNode' && args.node.sqlFragments.join('').includes('set lease_owner =')) claims++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
    });

    async function setUp(
      endpoints: string[],
      settings: Partial<DispatcherSettings> = {},
      now?: () => Date,
    ): Promise<Dispatcher> {
      receiver = await startReceiver();
      client = new CallbackClient({
        timeoutMs: TIMEOUT_MS,
        connectionsPerOrigin: 8,
        policy: new AddressPolicy(['loopback']),
        userAgent: 'test',
      });
      for (const id of endpoints) await addEndpoint(id, `${receiver.url}/${id}`);
      outbox = new Outbox(
        handle.dialect,
        () => dispatcher?.wake(),
        () => dispatcher,
      );
      dispatcher = new Dispatcher({
        db,
        dialect: handle.dialect,
        box,
        outbox,
        client,
        log: pino({ level: 'silent' }),
        now,
        settings: {
          concurrency: 8,
          endpointConcurrency: 4,
          // No poll within a test: what arrives came by the hand-off or a wake.
          pollIntervalMs: 60_000,
          timeoutMs: TIMEOUT_MS,
          retry: { scheduleMs: [0], retryAfterCapMs: 0 },
          disableAfterMs: 86_400_000,
          headerName: 'Service',
          retentionMs: 86_400_000 * 30,
          ...settings,
        },
      });
      dispatcher.start();
      return dispatcher;
    }

    async function tearDown(): Promise<void> {
      await dispatcher?.stop(1000);
      dispatcher = undefined;
      await client.close();
      await receiver.close();
    }

    async function addEndpoint(id: string, url: string): Promise<void> {
      await seedEndpoint(handle.db, { id, url, secret: box.seal(id, `whsec_${randomBytes(32).toString('base64')}`) });
    }

    /** One order.created event in its own transaction; returns its delivery ids. */
    async function commitEvent(n: number): Promise<string[]> {
      const recorded = await handle.db
        .transaction()
        .execute((trx) => outbox.record(trx, { type: 'order.created', data: { Id: n }, occurredAt: new Date() }));
      return recorded.deliveryIds;
    }

    async function leaseOwner(id: string): Promise<string | null> {
      const row = await handle.db
        .selectFrom('webhook_deliveries')
        .select('lease_owner')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return row.lease_owner;
    }

    const received = () => receiver.received.map((r) => String(r.headers['x-service-delivery']));

    test('a committed delivery is sent at once, without a claim on SQLite; PostgreSQL writes it unleased and claims it', async () => {
      const d = await setUp(['whep_a', 'whep_b']);
      try {
        const ids = await commitEvent(1);
        if (dialect === 'postgres') {
          assert.deepEqual(await Promise.all(ids.map(leaseOwner)), [null, null], 'written unleased');
          d.wake(); // what the NOTIFY does through the commit listener
        }
        await receiver.waitFor(2, 10_000);
        assert.deepEqual(received().sort(), [...ids].sort());
        await waitUntil(
          async () => (await Promise.all(ids.map(leaseOwner))).every((owner) => owner === null),
          10_000,
          () => 'the outcomes are recorded and the leases gone',
        );
        const expected = dialect === 'sqlite' ? { claimed: 0, handedOff: 2 } : { claimed: 2, handedOff: 0 };
        assert.deepEqual({ ...d.stats }, expected, `claims run: ${claims}`);
        // (On PostgreSQL the claim is one statement, run at start too, when it found nothing.)
        if (dialect === 'sqlite') assert.equal(claims, 0, 'no lease UPDATE ran');
      } finally {
        await tearDown();
      }
    });

    if (dialect === 'sqlite') {
      test('without a hand-off the dispatcher is woken after the commit, so its claim (on the read connection) finds the delivery', async () => {
        const d = await setUp(['whep_a']);
        try {
          // An outbox with no hand-off target: the wake is all the dispatcher hears (poll: a minute).
          outbox = new Outbox(handle.dialect, () => d.wake());
          const [id] = await commitEvent(1);
          await receiver.waitFor(1, 10_000);
          assert.deepEqual(received(), [id]);
          assert.deepEqual({ ...d.stats }, { claimed: 1, handedOff: 0 });
        } finally {
          await tearDown();
        }
      });

      test('a transaction that rolls back hands nothing over: its deliveries are never sent', async () => {
        const d = await setUp(['whep_a']);
        try {
          let rolledBack: string[] = [];
          await assert.rejects(
            handle.db.transaction().execute(async (trx) => {
              rolledBack = (
                await outbox.record(trx, { type: 'order.created', data: { Id: 1 }, occurredAt: new Date() })
              ).deliveryIds;
              throw new Error('the order fails after its event was recorded');
            }),
            /the order fails/,
          );
          assert.equal(rolledBack.length, 1);
          // Hand-offs run in commit order: once the later commit's delivery is here, the earlier one would be too.
          const [committed] = await commitEvent(2);
          await receiver.waitFor(1, 10_000);
          await new Promise((resolve) => setImmediate(resolve));
          assert.deepEqual(received(), [committed], `rolled back: ${rolledBack[0]}`);
          assert.deepEqual({ ...d.stats }, { claimed: 0, handedOff: 1 });
        } finally {
          await tearDown();
        }
      });

      test('with no room for it (the endpoint is at its limit) a delivery is written unleased and claimed once a slot frees', async () => {
        const d = await setUp(['whep_a'], { concurrency: 1, endpointConcurrency: 1 });
        try {
          let release: (() => void) | undefined;
          receiver.answer = (_request, index) =>
            index === 0 ? new Promise((resolve) => (release = () => resolve({ status: 200 }))) : { status: 200 };
          const [first] = await commitEvent(1);
          await receiver.waitFor(1, 10_000);
          const [second] = await commitEvent(2);
          assert.equal(await leaseOwner(second!), null, 'not leased: the dispatcher had no room for it');
          assert.ok(release, 'the first attempt is held');
          release();
          await receiver.waitFor(2, 10_000);
          assert.deepEqual(received(), [first, second]);
          assert.deepEqual({ ...d.stats }, { claimed: 1, handedOff: 1 });
        } finally {
          await tearDown();
        }
      });

      test('a handed-over delivery that waited too long for a slot is given back to the claim, not sent on a short lease', async () => {
        let clock = Date.now();
        const d = await setUp(['whep_a'], { concurrency: 1, endpointConcurrency: 1 }, () => new Date(clock));
        try {
          let release: (() => void) | undefined;
          receiver.answer = (_request, index) =>
            index === 0 ? new Promise((resolve) => (release = () => resolve({ status: 200 }))) : { status: 200 };
          // Both are offered a lease before either commits (one group commit): the second waits for the slot.
          const [[first], [second]] = await Promise.all([commitEvent(1), commitEvent(2)]);
          await receiver.waitFor(1, 10_000);
          assert.equal(typeof (await leaseOwner(second!)), 'string', 'the second is leased to this dispatcher');
          assert.deepEqual({ ...d.stats }, { claimed: 0, handedOff: 2 });
          clock += TIMEOUT_MS + 6000; // past half the lease margin: its attempt might outlive the lease
          release!();
          await receiver.waitFor(2, 10_000);
          assert.deepEqual(received(), [first, second], 'each once');
          assert.deepEqual({ ...d.stats }, { claimed: 1, handedOff: 2 }, 'the second went through a claim');
        } finally {
          await tearDown();
        }
      });
    }
  });
}
