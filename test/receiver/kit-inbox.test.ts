// The durable inbox on every test dialect: dedupe, claim order and leases, retries and dead letters,
// cursors, retention, its own receiver_ tables, and an acknowledged entry surviving a receiver crash.
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import pg from 'pg';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import { InboxWorker, openInbox, type Inbox, type NewInboxEntry } from '../../src/receiver/index.ts';
import { recordingHandler } from './kit-helpers.ts';

const T0 = new Date('2026-11-02T10:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

let counter = 0;
function entry(overrides: Partial<NewInboxEntry> = {}): NewInboxEntry {
  counter += 1;
  return {
    source: 'orders',
    deliveryId: `dlv_${counter}`,
    eventId: `evt_${counter}`,
    eventType: 'order.created',
    body: `{"Id":"evt_${counter}","Type":"order.created","OccurredAtUtc":"2026-11-02T10:00:00.000Z","Data":{}}`,
    via: 'webhook',
    receivedAt: T0,
    ...overrides,
  };
}

async function tableNames(dialect: string, url: string): Promise<string[]> {
  if (dialect === 'sqlite') {
    const db = new DatabaseSync(url.slice('sqlite:'.length));
    try {
      return (
        db.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").all() as {
          name: string;
        }[]
      ).map((r) => r.name);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (
      await client.query<{ name: string }>(
        'select table_name as name from information_schema.tables where table_schema = current_schema()',
      )
    ).rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

for (const dialect of testDialects()) {
  describe(`receiver inbox on ${dialect}`, () => {
    let database: TestDatabase;
    let inbox: Inbox;

    before(async () => {
      database = await createTestDatabase(dialect);
      inbox = await openInbox(database.url);
    });

    after(async () => {
      await inbox.close();
      await database.drop();
    });

    test('keeps its tables and migration bookkeeping under the receiver_ prefix', async () => {
      assert.equal(inbox.dialect, dialect);
      const names = await tableNames(dialect, database.url);
      assert.ok(
        names.includes('receiver_inbox') &&
          names.includes('receiver_cursors') &&
          names.includes('receiver_kysely_migration'),
        names.join(', '),
      );
      assert.deepEqual(
        names.filter((n) => !n.startsWith('receiver_')),
        [],
      );
      if (dialect === 'sqlite') {
        // WAL is a property of the file, so another connection can see it (synchronous=FULL is per connection).
        const file = new DatabaseSync(database.url.slice('sqlite:'.length));
        try {
          assert.equal((file.prepare('pragma journal_mode').get() as { journal_mode: string }).journal_mode, 'wal');
        } finally {
          file.close();
        }
      }
    });

    test('records an entry once: a second delivery id or event id for the same source is a duplicate', async () => {
      const first = entry();
      assert.equal(await inbox.record(first), 'recorded');
      assert.equal(await inbox.record(first), 'duplicate');
      assert.equal(await inbox.record({ ...entry(), deliveryId: first.deliveryId }), 'duplicate');
      assert.equal(await inbox.record({ ...entry(), eventId: first.eventId }), 'duplicate');
      assert.equal(await inbox.record({ ...first, source: 'billing' }), 'recorded', 'another source has its own ids');
      const stored = await inbox.list({ source: 'orders' });
      assert.equal(stored.filter((e) => e.eventId === first.eventId).length, 1);
      const [row] = stored.filter((e) => e.eventId === first.eventId);
      assert.deepEqual(
        { ...row, seq: 0 },
        { ...first, seq: 0, attempts: 0, state: 'pending', lastError: null, leaseUntil: null, leaseId: null },
      );
    });

    test('entries without a delivery id (reconciliation) never collide on it', async () => {
      assert.equal(await inbox.record(entry({ source: 'recon', deliveryId: null, via: 'reconciliation' })), 'recorded');
      assert.equal(await inbox.record(entry({ source: 'recon', deliveryId: null, via: 'reconciliation' })), 'recorded');
      assert.equal((await inbox.list({ source: 'recon' })).length, 2);
    });

    test('concurrent records of one event store it once and fail none', async () => {
      const e = entry({ source: 'race' });
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, (_, i) => inbox.record({ ...e, deliveryId: `dlv_race_${i}` })),
      );
      assert.equal(outcomes.filter((o) => o === 'recorded').length, 1);
      assert.equal((await inbox.list({ source: 'race' })).length, 1);
    });
  });

  describe(`receiver inbox work queue on ${dialect}`, () => {
    let database: TestDatabase;
    let inbox: Inbox;

    // Each test gets an empty inbox, so claimNext sees only the entries that test recorded.
    beforeEach(async () => {
      database = await createTestDatabase(dialect);
      inbox = await openInbox(database.url);
    });

    afterEach(async () => {
      await inbox.close();
      await database.drop();
    });

    test('concurrent claims never hand out the same entry twice', async () => {
      for (let i = 0; i < 6; i++) await inbox.record(entry());
      const claims = await Promise.all(Array.from({ length: 6 }, () => inbox.claimNext(at(0), 60_000)));
      const seqs = claims.map((c) => c?.seq);
      assert.equal(new Set(seqs).size, 6, `claimed ${seqs.join(', ')}`);
      assert.equal(await inbox.claimNext(at(0), 60_000), undefined);
    });

    test('claims in order of arrival, leases the claim, and claims again after the lease runs out', async () => {
      const [a, b] = [entry(), entry()];
      await inbox.record(a);
      await inbox.record(b);
      const first = await inbox.claimNext(at(0), 1_000);
      assert.equal(first?.eventId, a.eventId);
      assert.equal(first?.attempts, 1);
      const second = await inbox.claimNext(at(0), 1_000);
      assert.equal(second?.eventId, b.eventId, 'a leased entry is skipped');
      assert.equal(await inbox.claimNext(at(999), 1_000), undefined, 'both are leased');
      const again = await inbox.claimNext(at(1_000), 1_000);
      assert.equal(again?.eventId, a.eventId, 'the expired lease of a crashed worker frees the entry');
      assert.equal(again?.attempts, 2);
      await inbox.complete(again!.seq);
      await inbox.complete(second!.seq);
      assert.equal(await inbox.claimNext(at(60_000), 1_000), undefined, 'done entries are never claimed');
      assert.deepEqual(
        (await inbox.list({ state: 'done' })).map((e) => e.eventId),
        [a.eventId, b.eventId],
      );
    });

    test('retryLater holds an entry back until its time; markDead keeps it with the last error', async () => {
      const e = entry();
      await inbox.record(e);
      const claimed = (await inbox.claimNext(at(0), 60_000))!;
      await inbox.retryLater(claimed.seq, 'handler failed: 1', at(5_000));
      assert.equal(await inbox.claimNext(at(4_999), 60_000), undefined);
      const retried = (await inbox.claimNext(at(5_000), 60_000))!;
      assert.equal(retried.seq, claimed.seq);
      assert.equal(retried.attempts, 2);
      assert.equal(retried.lastError, 'handler failed: 1');
      await inbox.markDead(retried.seq, 'handler failed: 2');
      assert.equal(await inbox.claimNext(at(3_600_000), 60_000), undefined);
      const [dead] = await inbox.list({ state: 'dead' });
      assert.deepEqual([dead?.eventId, dead?.attempts, dead?.lastError], [e.eventId, 2, 'handler failed: 2']);
    });

    test('requeueDead gives dead entries fresh attempts, filtered by source or seq, and leaves the others alone', async () => {
      const kill = async (e: NewInboxEntry) => {
        await inbox.record(e);
        const claimed = (await inbox.claimNext(at(0), 60_000))!;
        await inbox.markDead(claimed.seq, `failed ${e.eventId}`);
        return claimed.seq;
      };
      const ordersA = await kill(entry());
      const ordersB = await kill(entry());
      const billing = await kill(entry({ source: 'billing' }));
      await inbox.record(entry({ receivedAt: at(60_000) })); // pending, never dead: untouched

      assert.equal(await inbox.requeueDead({ seqs: [] }, at(0)), 0);
      assert.equal(await inbox.requeueDead({ source: 'billing', seqs: [ordersA] }, at(0)), 0, 'both filters apply');
      assert.equal(await inbox.requeueDead({ seqs: [ordersB] }, at(1_000)), 1);
      assert.deepEqual(
        (await inbox.list({ state: 'dead' })).map((e) => e.seq),
        [ordersA, billing],
      );
      assert.equal(await inbox.requeueDead({ source: 'orders' }, at(1_000)), 1);
      assert.deepEqual(
        (await inbox.list({ state: 'dead' })).map((e) => e.seq),
        [billing],
      );

      assert.equal(await inbox.claimNext(at(999), 60_000), undefined, 'due at the requeue time, not before');
      const again = (await inbox.claimNext(at(1_000), 60_000))!;
      assert.equal(again.seq, ordersA, 'arrival order still holds');
      assert.equal(again.attempts, 1, 'a fresh set of attempts');
      assert.equal(again.lastError, `failed ${again.eventId}`, 'the last error stays until the next attempt');
      assert.equal(await inbox.requeueDead({}, at(2_000)), 1);
      assert.deepEqual(await inbox.list({ state: 'dead' }), []);
    });

    test('saves, overwrites and loads a cursor per source', async () => {
      assert.equal(await inbox.getCursor('orders'), undefined);
      await inbox.saveCursor('orders', 'cursor-1');
      await inbox.saveCursor('billing', 'other');
      await inbox.saveCursor('orders', 'cursor-2');
      assert.equal(await inbox.getCursor('orders'), 'cursor-2');
      assert.equal(await inbox.getCursor('billing'), 'other');
    });

    test('purges only done entries received before the cut-off', async () => {
      const old = entry({ source: 'purge', receivedAt: at(-10_000) });
      const oldDead = entry({ source: 'purge', receivedAt: at(-10_000) });
      const oldPending = entry({ source: 'purge', receivedAt: at(-10_000) });
      const recent = entry({ source: 'purge', receivedAt: at(0) });
      for (const e of [old, oldDead, oldPending, recent]) await inbox.record(e);
      const stored = await inbox.list({ source: 'purge' });
      const seqOf = (id: string) => stored.find((s) => s.eventId === id)!.seq;
      await inbox.complete(seqOf(old.eventId));
      await inbox.markDead(seqOf(oldDead.eventId), 'gave up');
      await inbox.complete(seqOf(recent.eventId));
      assert.equal(await inbox.purgeProcessed(at(-1)), 1);
      assert.deepEqual(
        (await inbox.list({ source: 'purge' })).map((e) => e.eventId),
        [oldDead.eventId, oldPending.eventId, recent.eventId],
      );
    });
  });

  describe(`a receiver crash after acknowledging on ${dialect}`, () => {
    test('the acknowledged entry is processed exactly once by the next process', async () => {
      const database = await createTestDatabase(dialect);
      try {
        // The first receiver records (the 200 went out) and dies before its worker ran.
        const crashed = await openInbox(database.url);
        const e = entry({ receivedAt: new Date() });
        assert.equal(await crashed.record(e), 'recorded');
        await crashed.close();

        const restarted = await openInbox(database.url);
        const seen = recordingHandler();
        const worker = new InboxWorker({ inbox: restarted, handler: seen.handler, pollIntervalMs: 20 });
        worker.start();
        try {
          await waitUntil(
            async () => (await restarted.list({ state: 'done' })).length === 1,
            10_000,
            () => 'the entry to be done',
          );
          assert.equal(
            await restarted.record(e),
            'duplicate',
            "the producer's retry after the crash is still a duplicate",
          );
        } finally {
          await worker.stop();
          await restarted.close();
        }
        assert.deepEqual(
          seen.events.map((x) => x.id),
          [e.eventId],
        );
      } finally {
        await database.drop();
      }
    });

    test('an entry claimed by a worker that crashed is claimed again after its lease', async () => {
      const database = await createTestDatabase(dialect);
      const inbox = await openInbox(database.url);
      const seen = recordingHandler();
      const worker = new InboxWorker({ inbox, handler: seen.handler, pollIntervalMs: 20 });
      try {
        const e = entry({ receivedAt: new Date() });
        await inbox.record(e);
        const claimed = await inbox.claimNext(new Date(), 300); // the crashed worker's claim
        assert.equal(claimed?.eventId, e.eventId);
        worker.start();
        await waitUntil(
          async () => (await inbox.list({ state: 'done' })).length === 1,
          10_000,
          () => 'the entry to be done',
        );
        assert.deepEqual(
          seen.events.map((x) => x.id),
          [e.eventId],
        );
        assert.equal((await inbox.list({ state: 'done' }))[0]?.attempts, 2);
      } finally {
        await worker.stop();
        await inbox.close();
        await database.drop();
      }
    });
  });
}
