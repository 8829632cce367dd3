// The inbox worker: retries on a compressed schedule, the dead-letter state, arrival order with one
// event at a time, and the retention job.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { withDeadline } from '../helpers/deadline.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import {
  InboxWorker,
  openInbox,
  type Inbox,
  type NewInboxEntry,
  type ReceivedEvent,
} from '../../src/receiver/index.ts';

const SCHEDULE = [10, 20, 40];
const DAY = 24 * 60 * 60_000;

let counter = 0;
function entry(overrides: Partial<NewInboxEntry> = {}): NewInboxEntry {
  counter += 1;
  const id = `evt_w${counter}`;
  return {
    source: 'orders',
    deliveryId: `dlv_w${counter}`,
    eventId: id,
    eventType: 'order.paid',
    body: JSON.stringify({
      Id: id,
      Type: 'order.paid',
      OccurredAtUtc: '2026-11-02T10:00:00.000Z',
      Timestamp: '2026-11-02T10:00:01.000Z',
      Data: { N: counter },
    }),
    via: 'webhook',
    receivedAt: new Date(),
    ...overrides,
  };
}

for (const dialect of testDialects()) {
  describe(`inbox worker on ${dialect}`, () => {
    let database: TestDatabase;
    let inbox: Inbox;
    let worker: InboxWorker | undefined;

    beforeEach(async () => {
      database = await createTestDatabase(dialect);
      inbox = await openInbox(database.url);
    });

    afterEach(async () => {
      await worker?.stop();
      worker = undefined;
      await inbox.close();
      await database.drop();
    });

    test('a handler failing twice then succeeding processes the event once, after three tries', async () => {
      const e = entry();
      await inbox.record(e);
      let tries = 0;
      const succeeded: ReceivedEvent[] = [];
      const logged: string[] = [];
      worker = new InboxWorker({
        inbox,
        retryScheduleMs: SCHEDULE,
        pollIntervalMs: 5,
        log: (msg) => logged.push(msg),
        handler: (event) => {
          tries += 1;
          if (tries <= 2) throw new Error(`not yet (${tries})`);
          succeeded.push(event);
        },
      });
      worker.start();
      await waitUntil(
        async () => (await inbox.list({ state: 'done' })).length === 1,
        10_000,
        () => 'the entry to be done',
      );
      const [done] = await inbox.list({ state: 'done' });
      assert.equal(tries, 3);
      assert.equal(done?.attempts, 3);
      assert.equal(done?.lastError, 'not yet (2)');
      assert.deepEqual(
        succeeded.map((x) => [x.id, x.type, x.occurredAt, x.timestamp, x.deliveryId, x.via]),
        [[e.eventId, 'order.paid', '2026-11-02T10:00:00.000Z', '2026-11-02T10:00:01.000Z', e.deliveryId, 'webhook']],
      );
      assert.equal(logged.filter((m) => m.includes('will retry')).length, 2);
    });

    test('a handler that always fails leaves the event dead with its last error, after every retry', async () => {
      await inbox.record(entry());
      let tries = 0;
      worker = new InboxWorker({
        inbox,
        retryScheduleMs: SCHEDULE,
        pollIntervalMs: 5,
        handler: () => {
          tries += 1;
          throw new Error(`boom ${tries}`);
        },
      });
      worker.start();
      await waitUntil(
        async () => (await inbox.list({ state: 'dead' })).length === 1,
        10_000,
        () => 'the entry to be dead',
      );
      const [dead] = await inbox.list({ state: 'dead' });
      assert.equal(dead?.attempts, SCHEDULE.length + 1);
      assert.equal(dead?.lastError, `boom ${SCHEDULE.length + 1}`);
      assert.equal(tries, SCHEDULE.length + 1);
    });

    test('processes events in order of arrival, one at a time', async () => {
      const entries = Array.from({ length: 5 }, () => entry());
      for (const e of entries) await inbox.record(e);
      const order: string[] = [];
      let inFlight = 0;
      let maxInFlight = 0;
      worker = new InboxWorker({
        inbox,
        pollIntervalMs: 5,
        handler: async (event) => {
          inFlight += 1;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await new Promise((resolve) => setImmediate(resolve));
          order.push(event.id);
          inFlight -= 1;
        },
      });
      worker.start();
      worker.wake(); // a wake during processing must not start a second loop
      await waitUntil(
        () => order.length === entries.length,
        10_000,
        () => `processed ${order.length}`,
      );
      assert.deepEqual(
        order,
        entries.map((e) => e.eventId),
      );
      assert.equal(maxInFlight, 1);
    });

    test('purges processed entries older than the retention period and keeps the rest', async () => {
      const old = entry({ receivedAt: new Date(Date.now() - 8 * DAY) });
      const oldDead = entry({ receivedAt: new Date(Date.now() - 8 * DAY) });
      const recent = entry({ receivedAt: new Date(Date.now() - DAY) });
      for (const e of [old, oldDead, recent]) await inbox.record(e);
      for (const e of await inbox.list()) {
        if (e.eventId === oldDead.eventId) await inbox.markDead(e.seq, 'gave up');
        else await inbox.complete(e.seq);
      }
      worker = new InboxWorker({ inbox, pollIntervalMs: 5, handler: () => {} }); // default retention: 7 days
      worker.start();
      await waitUntil(
        async () => (await inbox.list()).length === 2,
        10_000,
        () => 'the old done entry to be purged',
      );
      assert.deepEqual(
        (await inbox.list()).map((e) => e.eventId),
        [oldDead.eventId, recent.eventId],
      );
    });

    test('stop() lets the event in progress finish', async () => {
      await inbox.record(entry());
      let release!: () => void;
      let started = false;
      worker = new InboxWorker({
        inbox,
        pollIntervalMs: 5,
        handler: () =>
          new Promise<void>((resolve) => {
            started = true;
            release = resolve;
          }),
      });
      worker.start();
      await waitUntil(
        () => started,
        10_000,
        () => 'the handler to start',
      );
      const stopping = worker.stop();
      release();
      await withDeadline(stopping, 10_000, 'stop() once the handler in progress was released');
      assert.equal((await inbox.list({ state: 'done' })).length, 1);
    });
  });
}
