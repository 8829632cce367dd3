// The signed body's Timestamp (docs/guides/producing-webhooks.md, "What a delivery looks like"): the attempt time in
// ISO 8601 with milliseconds, never before OccurredAtUtc, even in the event's own second or after the clock stepped
// back; webhook-timestamp stays whole seconds (Standard Webhooks). A real dispatcher sends to a real HTTP
// receiver, and the receiver kit accepts what arrives. Both dialects.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { acceptDelivery, openInbox, type Inbox } from '../../src/receiver/index.ts';
import { AddressPolicy } from '../../src/webhooks/delivery/address-policy.ts';
import { CallbackClient } from '../../src/webhooks/delivery/callback-client.ts';
import { Dispatcher } from '../../src/webhooks/delivery/dispatcher.ts';
import { Outbox } from '../../src/webhooks/outbox/events.outbox.ts';
import { SecretBox } from '../../src/webhooks/store/secrets.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { startReceiver, type ReceivedDelivery, type TestReceiver } from '../helpers/webhook-receiver.ts';
import { seedDelivery } from '../helpers/webhook-seed.ts';

const box = new SecretBox(randomBytes(32));
const SETTINGS = {
  concurrency: 4,
  endpointConcurrency: 4,
  pollIntervalMs: 60_000,
  timeoutMs: 5000,
  retry: { scheduleMs: [0], retryAfterCapMs: 0 },
  disableAfterMs: 86_400_000,
  headerName: 'Service',
  retentionMs: 86_400_000 * 30,
};
const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

for (const dialect of testDialects()) {
  describe(`the delivery Timestamp [${dialect}]`, () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;
    let receiver: TestReceiver;
    let inbox: Inbox;
    const secret = `whsec_${randomBytes(32).toString('base64')}`;

    before(async () => {
      database = await createTestDatabase(dialect);
      handle = openDatabase(database.url);
      await migrateToLatest(handle);
      receiver = await startReceiver();
      inbox = await openInbox('sqlite::memory:');
    });
    after(async () => {
      await inbox.close();
      await receiver.close();
      await handle.db.destroy();
      await database.drop();
    });
    beforeEach(async () => {
      await handle.db.deleteFrom('webhook_endpoints').execute(); // deliveries and attempts cascade
      await handle.db.deleteFrom('webhook_events').execute();
      receiver.received.length = 0;
    });

    /** One endpoint on the receiver and one event that occurred at `occurredAt`, its delivery due at `dueAt`. */
    async function addDelivery(occurredAt: Date, dueAt: Date): Promise<void> {
      await seedDelivery(handle.db, box, { url: `${receiver.url}/hook`, secret, occurredAt, dueAt });
    }

    /** Runs a dispatcher (with `now` as its clock, when given) until the receiver has one delivery. */
    async function deliverOne(now?: () => Date): Promise<ReceivedDelivery> {
      const client = new CallbackClient({
        timeoutMs: SETTINGS.timeoutMs,
        connectionsPerOrigin: 4,
        policy: new AddressPolicy(['loopback']),
        userAgent: 'test',
      });
      const dispatcher = new Dispatcher({
        db: handle.db,
        dialect: handle.dialect,
        box,
        outbox: new Outbox(handle.dialect, () => undefined),
        client,
        log: pino({ level: 'silent' }),
        settings: SETTINGS,
        ...(now ? { now } : {}),
      });
      try {
        dispatcher.start();
        const [received] = await receiver.waitFor(1);
        return received!;
      } finally {
        await dispatcher.stop(1000);
        await client.close();
      }
    }

    function envelope(received: ReceivedDelivery): { OccurredAtUtc: string; Timestamp: string } {
      return JSON.parse(received.body) as { OccurredAtUtc: string; Timestamp: string };
    }

    /** The receiver kit, at `now`, takes the delivery exactly as it arrived. */
    async function kitAccepts(received: ReceivedDelivery, now: Date): Promise<void> {
      const result = await acceptDelivery(
        { sources: { orders: [secret] }, inbox, now: () => now },
        {
          source: 'orders',
          rawBody: Buffer.from(received.body, 'utf8'),
          headers: received.headers as Record<string, string>,
        },
      );
      assert.equal(result.status, 200, JSON.stringify(result.problem));
    }

    test('a delivery carries the attempt time with milliseconds, not before OccurredAtUtc', async () => {
      const occurredAt = new Date();
      await addDelivery(occurredAt, occurredAt);
      const received = await deliverOne();
      const { OccurredAtUtc, Timestamp } = envelope(received);
      assert.match(Timestamp, ISO_MILLIS, received.body);
      assert.equal(OccurredAtUtc, occurredAt.toISOString());
      assert.ok(Date.parse(Timestamp) >= Date.parse(OccurredAtUtc), received.body);
      assert.match(String(received.headers['webhook-timestamp']), /^\d+$/, 'Standard Webhooks: integer seconds');
      assert.equal(Number(received.headers['webhook-timestamp']), Math.floor(Date.parse(Timestamp) / 1000));
      await kitAccepts(received, new Date());
    });

    test('an attempt in the last millisecond of the event’s own second is not dated before the event', async () => {
      const occurredAt = new Date('2026-11-24T10:00:00.999Z');
      await addDelivery(occurredAt, occurredAt);
      const received = await deliverOne(() => occurredAt);
      const { OccurredAtUtc, Timestamp } = envelope(received);
      assert.equal(OccurredAtUtc, '2026-11-24T10:00:00.999Z');
      assert.equal(Timestamp, '2026-11-24T10:00:00.999Z', received.body);
      assert.equal(received.headers['webhook-timestamp'], String(Date.parse('2026-11-24T10:00:00Z') / 1000));
      await kitAccepts(received, occurredAt);
    });

    test('a clock stepped back behind the event still dates the attempt at the event, not before it', async () => {
      const occurredAt = new Date('2026-11-24T10:00:00.999Z');
      const stepped = new Date('2026-11-24T10:00:00.400Z'); // NTP moved the clock back after the commit
      await addDelivery(occurredAt, new Date('2026-11-24T10:00:00.000Z'));
      const received = await deliverOne(() => stepped);
      const { Timestamp } = envelope(received);
      assert.equal(Timestamp, '2026-11-24T10:00:00.999Z', received.body);
      await kitAccepts(received, stepped);
    });
  });
}
