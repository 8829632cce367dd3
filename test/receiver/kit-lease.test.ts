// The worker's lease on the real inbox, every test dialect, with an injected clock: short, so a dead
// worker's entry is taken over within seconds; renewed by a heartbeat while the handler runs, so a slow
// handler keeps its entry; owned, so a worker that lost its lease cannot settle the entry; and kept in
// arrival order after a crash (docs/guides/receiving-webhooks.md, "Inbox and worker").
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { withDeadline } from '../helpers/deadline.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import { InboxWorker, openInbox, type Inbox, type InboxEntry, type NewInboxEntry } from '../../src/receiver/index.ts';

const T0 = new Date('2026-11-02T10:00:00.000Z');
const LEASE_MS = 15_000;
/** The longest a crashed worker's entry may wait, as docs/guides/receiving-webhooks.md says. */
const TAKEOVER_BOUND_MS = 30_000;

let counter = 0;
function entry(): NewInboxEntry {
  counter += 1;
  const id = `evt_l${counter}`;
  return {
    source: 'orders',
    deliveryId: `dlv_l${counter}`,
    eventId: id,
    eventType: 'order.paid',
    body: JSON.stringify({ Id: id, Type: 'order.paid', Timestamp: T0.toISOString(), Data: {} }),
    via: 'webhook',
    receivedAt: T0,
  };
}

/** A clock the test moves by hand. */
function manualClock(start: Date) {
  let ms = start.getTime();
  return { now: () => new Date(ms), set: (to: number) => void (ms = to), ms: () => ms };
}

/** Stops `worker` within 10 s: stop() waits for the handler in progress, which a bug could leave blocked. */
function stopWithin(worker: InboxWorker, what: string): Promise<void> {
  return withDeadline(worker.stop(), 10_000, `${what} to stop (its handler still running)`);
}

/** Released after each test, pass or fail, so that stopping its worker never waits for it. */
const blocked: (() => void)[] = [];

/** A handler that blocks on every call until the test releases it, and reports each start. */
function blockingHandler() {
  const started: string[] = [];
  const finished: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  blocked.push(release);
  let failure: Error | undefined;
  return {
    started,
    finished,
    release,
    failWith: (error: Error) => void (failure = error),
    handler: async (event: { id: string }) => {
      started.push(event.id);
      await gate;
      finished.push(event.id);
      if (failure) throw failure;
    },
  };
}

for (const dialect of testDialects()) {
  describe(`inbox worker leases on ${dialect}`, () => {
    let database: TestDatabase;
    let inbox: Inbox;
    const workers: InboxWorker[] = [];
    const inboxes: Inbox[] = [];

    beforeEach(async () => {
      database = await createTestDatabase(dialect);
      inbox = await openInbox(database.url);
    });

    afterEach(async () => {
      for (const release of blocked.splice(0)) release();
      for (const w of workers.splice(0)) await stopWithin(w, 'a worker of the test');
      for (const i of inboxes.splice(0)) await i.close().catch(() => {});
      await inbox.close();
      await database.drop();
    });

    /** A worker on its own connection, as another process would have. */
    async function workerOn(options: Omit<ConstructorParameters<typeof InboxWorker>[0], 'inbox'>) {
      const own = await openInbox(database.url);
      inboxes.push(own);
      const worker = new InboxWorker({ pollIntervalMs: 20, ...options, inbox: own });
      workers.push(worker);
      return { worker, inbox: own };
    }

    /** The one entry of the test; `last` keeps what was read last, for a failed wait's message. */
    let last: InboxEntry | undefined;
    async function only(): Promise<InboxEntry> {
      const [row] = await inbox.list();
      assert.ok(row, 'the entry is in the inbox');
      return (last = row);
    }

    test('the entry of a worker that died mid-handler is taken over within seconds, not minutes', async () => {
      const e = entry();
      await inbox.record(e);
      const dying = blockingHandler();
      // Default lease: the test holds the worker to what docs/guides/receiving-webhooks.md promises, whatever the
      // constant says.
      const a = await workerOn({ handler: dying.handler, now: () => T0 });
      a.worker.start();
      await waitUntil(
        () => dying.started.length === 1,
        10_000,
        () => 'the first worker started the handler',
      );
      // Its process dies: no heartbeat, no complete. Closing its connection is all that is left of it.
      await a.inbox.close();

      assert.equal(await inbox.claimNext(new Date(T0.getTime() + 1_000), LEASE_MS), undefined, 'still leased');
      const seen: string[] = [];
      const b = await workerOn({
        handler: (event) => void seen.push(event.id),
        now: () => new Date(T0.getTime() + TAKEOVER_BOUND_MS),
      });
      b.worker.start();
      await waitUntil(
        async () => (await only()).state === 'done',
        10_000,
        () => `the second worker took the entry over: ${JSON.stringify(last)}`,
      );
      assert.deepEqual(seen, [e.eventId]);
      assert.equal((await only()).attempts, 2);
      dying.release();
    });

    test('a long-running handler keeps its lease through heartbeats and is never claimed by another worker', async () => {
      const e = entry();
      await inbox.record(e);
      const clock = manualClock(T0);
      const slow = blockingHandler();
      const a = await workerOn({ handler: slow.handler, leaseMs: LEASE_MS, heartbeatMs: 20, now: clock.now });
      a.worker.start();
      await waitUntil(
        () => slow.started.length === 1,
        10_000,
        () => 'the handler started',
      );
      // Ten minutes of handler time, in steps shorter than the lease: each heartbeat pushes the lease on.
      for (let t = T0.getTime(); t <= T0.getTime() + 10 * 60_000; t += LEASE_MS / 2) {
        clock.set(t);
        await waitUntil(
          async () => (await only()).leaseUntil?.getTime() === t + LEASE_MS,
          10_000,
          () => `the lease renewed to ${new Date(t + LEASE_MS).toISOString()}: ${JSON.stringify(last)}`,
        );
        for (const inOrder of [false, true])
          assert.equal(await inbox.claimNext(clock.now(), LEASE_MS, { inOrder }), undefined, `claimed at ${t}`);
      }
      slow.release();
      await waitUntil(
        async () => (await only()).state === 'done',
        10_000,
        () => `the entry was completed: ${JSON.stringify(last)}`,
      );
      assert.equal((await only()).attempts, 1, 'one claim, one attempt');
      assert.deepEqual(slow.finished, [e.eventId]);
    });

    // The loss is found by the heartbeat, or (a heartbeat too slow to notice) by the settling write itself.
    for (const heartbeatMs of [20, 3_600_000])
      for (const outcome of ['succeeds', 'fails'] as const) {
        test(`a worker that lost its lease does not settle the entry when its handler ${outcome} (heartbeat every ${heartbeatMs} ms)`, async () => {
          await inbox.record(entry());
          const logs: string[] = [];
          const stalled = blockingHandler();
          if (outcome === 'fails') stalled.failWith(new Error('handler failed late'));
          const a = await workerOn({
            handler: stalled.handler,
            leaseMs: LEASE_MS,
            heartbeatMs,
            now: () => T0,
            retryScheduleMs: [1_000],
            log: (msg) => void logs.push(msg),
          });
          a.worker.start();
          await waitUntil(
            () => stalled.started.length === 1,
            10_000,
            () => 'the handler started',
          );
          const held = await only();
          // Another worker, whose clock is past the lease (the first one's renewals were not reaching it).
          // On PostgreSQL a claim skips the row while a heartbeat has it locked: claim until it lands.
          let taken: InboxEntry | undefined;
          await waitUntil(
            async () => (taken = await inbox.claimNext(new Date(T0.getTime() + LEASE_MS + 1), LEASE_MS)) !== undefined,
            10_000,
            () => 'the second claim took the entry',
          );
          assert.ok(taken);
          assert.equal(taken.seq, held.seq);
          assert.notEqual(taken.leaseId, held.leaseId);
          if (heartbeatMs === 20)
            await waitUntil(
              () => logs.some((m) => /lost the lease while the handler ran/.test(m)),
              10_000,
              () => `the heartbeat found the lease lost: ${JSON.stringify(logs)}`,
            );
          stalled.release();
          await waitUntil(
            () => logs.some((m) => /lost the lease/.test(m)) && stalled.finished.length === 1,
            10_000,
            () => `the handler returned and the worker saw it lost the lease: ${JSON.stringify(logs)}`,
          );
          await stopWithin(a.worker, 'the worker that lost its lease');

          const now = await only();
          assert.equal(now.state, 'pending', `the first worker left it alone: ${JSON.stringify(now)}`);
          assert.equal(now.leaseId, taken.leaseId, 'still held by the claim that took it over');
          assert.equal(now.lastError, null, 'the stale outcome was not recorded');
          assert.equal(await inbox.complete(held.seq, held.leaseId!), false, 'the stale claim cannot complete');
          assert.equal(await inbox.markDead(held.seq, 'stale', held.leaseId!), false, 'nor mark it dead');
          assert.equal(await inbox.retryLater(held.seq, 'stale', T0, held.leaseId!), false, 'nor retry it');
          assert.equal(await inbox.renewLease(held.seq, held.leaseId!, T0), false, 'nor renew it');
          assert.equal((await only()).state, 'pending');
          assert.equal(await inbox.complete(held.seq, taken.leaseId!), true, 'the new holder settles it');
          assert.equal((await only()).state, 'done');
        });
      }

    test('a restarted worker runs the entry its crashed predecessor held before any later entry', async () => {
      const [crashed, later1, later2] = [entry(), entry(), entry()];
      for (const e of [crashed, later1, later2]) await inbox.record(e);
      const held = await inbox.claimNext(T0, LEASE_MS); // the predecessor's claim; then it died
      assert.equal(held?.eventId, crashed.eventId);

      const clock = manualClock(new Date(T0.getTime() + 1_000));
      const seen: string[] = [];
      const own = await openInbox(database.url);
      inboxes.push(own);
      let emptyClaims = 0;
      const claimNext: Inbox['claimNext'] = async (...args) => {
        const claimed = await own.claimNext(...args);
        if (!claimed) emptyClaims += 1;
        return claimed;
      };
      const counting = new Proxy(own, {
        get: (target, name) => {
          if (name === 'claimNext') return claimNext;
          const value: unknown = Reflect.get(target, name);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const worker = new InboxWorker({
        inbox: counting,
        handler: (event) => void seen.push(event.id),
        leaseMs: LEASE_MS,
        pollIntervalMs: 20,
        now: clock.now,
      });
      workers.push(worker);
      worker.start();
      // Several polls while the dead worker's lease still holds: the later entries are free, yet wait.
      await waitUntil(
        () => emptyClaims >= 3,
        10_000,
        () => `the worker polled (${emptyClaims} empty claims, ran ${JSON.stringify(seen)})`,
      );
      assert.deepEqual(seen, [], 'nothing passed the held entry');
      clock.set(T0.getTime() + LEASE_MS);
      await waitUntil(
        () => seen.length === 3,
        10_000,
        () => `all three ran: ${JSON.stringify(seen)}`,
      );
      assert.deepEqual(seen, [crashed.eventId, later1.eventId, later2.eventId]);
    });

    test('after its first lease period a worker passes an entry another live worker holds', async () => {
      const [held, next] = [entry(), entry()];
      await inbox.record(held);
      await inbox.record(next);
      const other = await inbox.claimNext(new Date(T0.getTime() + 5_000), LEASE_MS); // a live worker's claim
      assert.equal(other?.eventId, held.eventId);
      const clock = manualClock(T0);
      const seen: string[] = [];
      const b = await workerOn({ handler: (event) => void seen.push(event.id), leaseMs: LEASE_MS, now: clock.now });
      b.worker.start(); // in order until T0 + lease
      clock.set(T0.getTime() + LEASE_MS); // past that, while the other worker's lease still runs
      await waitUntil(
        () => seen.length === 1,
        10_000,
        () => `the free entry ran: ${JSON.stringify(seen)}`,
      );
      assert.deepEqual(seen, [next.eventId]);
    });
  });
}
