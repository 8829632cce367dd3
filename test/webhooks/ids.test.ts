// Event, delivery and endpoint ids (events.catalogue.ts newId): 32 hex digits, creation time in milliseconds
// first (RFC 9562 §5.7's layout), then 80 random bits. Checked on the ids themselves and on what a create
// writes on each dialect (SQLite: record(); PostgreSQL: the one-statement create, whose delivery ids are
// derived in SQL).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Db } from '../../src/db/database.ts';
import { newId } from '../../src/webhooks/outbox/events.catalogue.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { seedEndpoint } from '../helpers/webhook-seed.ts';

const ID = /^(evt|dlv|whep)_([0-9a-f]{12})([0-9a-f]{20})$/;

/** The creation time an id carries, in Unix milliseconds. */
function timeOf(id: string): number {
  const match = ID.exec(id);
  assert.ok(match, `${id} is a prefixed 32-hex-digit id`);
  return Number.parseInt(match[2] ?? '', 16);
}

describe('newId', () => {
  test('is the prefix, 12 hex digits of the time in milliseconds, then 20 random hex digits', () => {
    const now = Date.UTC(2026, 10, 25, 1, 2, 3, 456);
    const id = newId('evt', now);
    assert.match(id, ID);
    assert.equal(timeOf(id), now);
    assert.equal(id.slice(4, 16), now.toString(16).padStart(12, '0'));
  });

  test('ids made later sort after earlier ones, as text', () => {
    const times = [1, 255, 256, Date.UTC(2001, 0, 1), Date.UTC(2026, 10, 25), Date.UTC(2200, 0, 1)];
    const ids = times.map((t) => newId('dlv', t));
    assert.deepEqual([...ids].sort(), ids);
  });

  test('ids made in the same millisecond differ in their random part', () => {
    const now = Date.now();
    const ids = new Set(Array.from({ length: 10_000 }, () => newId('whep', now)));
    assert.equal(ids.size, 10_000);
    const randomParts = new Set([...ids].map((id) => id.slice(-20)));
    assert.equal(randomParts.size, 10_000, 'the 80 bits after the time are drawn per id');
  });
});

for (const dialect of testDialects()) {
  describe(`the ids a create writes [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    let db: Db;
    before(async () => {
      ({ server, token } = await startWithClientToken(dialect, { WEBHOOK_DISPATCHER: 'false' }));
      db = server.app.database.db;
      for (let i = 0; i < 3; i++)
        await seedEndpoint(db, {
          id: newId('whep'),
          url: `https://receiver${i}.example/hook`,
          eventTypes: ['order.created'],
          secret: 'not used: the dispatcher is off',
        });
    });
    after(async () => {
      await server.close();
    });

    test('the event and each delivery carry the time of the create, and later creates sort after', async () => {
      const customer = randomUUID();
      const windows: { from: number; to: number }[] = [];
      for (let i = 0; i < 3; i++) {
        const from = Date.now();
        const res = await call(server.url, 'POST', '/api/orders', {
          token,
          body: { CustomerId: customer, Total: 1, Currency: 'EUR' },
          headers: { 'idempotency-key': randomUUID() },
        });
        expectStatus(res, 201);
        windows.push({ from, to: Date.now() });
        // The next create starts in a later millisecond, so its ids sort after these.
        while (Date.now() === windows[i]?.to) await new Promise((resolve) => setImmediate(resolve));
      }
      const events = await db
        .selectFrom('webhook_events')
        .select(['id', 'seq'])
        .where('customer_id', '=', customer)
        .orderBy('seq')
        .execute();
      assert.equal(events.length, 3, JSON.stringify(events));
      for (const [i, event] of events.entries()) {
        const window = windows[i];
        assert.ok(window);
        const deliveries = await db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('event_id', '=', event.id)
          .orderBy('id')
          .execute();
        assert.equal(deliveries.length, 3, JSON.stringify(deliveries));
        const made = [event.id, ...deliveries.map((d) => d.id)];
        for (const id of made) {
          const at = timeOf(id);
          assert.ok(at >= window.from && at <= window.to, `${id}: ${at} is within [${window.from}, ${window.to}]`);
        }
        assert.equal(new Set(made.map((id) => id.slice(-20))).size, made.length, `random parts differ: ${made}`);
      }
      const eventIds = events.map((e) => e.id);
      assert.deepEqual([...eventIds].sort(), eventIds, 'event ids sort in the order they were made');
    });
  });
}
