// Recording outcomes when the database refuses one of them: the dispatcher falls back from one batch to
// one outcome at a time, so a single bad row never sinks the others (which would all be sent again at
// their lease's end), and the bad one is recorded without the receiver's text if that is what it takes.
// Real receivers and databases; the fault is injected into an otherwise real CallbackClient. Both dialects.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { CallbackClient, type AttemptResult } from '../../src/webhooks/delivery/callback-client.ts';
import { Dispatcher } from '../../src/webhooks/delivery/dispatcher.ts';
import { Outbox } from '../../src/webhooks/outbox/events.outbox.ts';
import { AddressPolicy } from '../../src/webhooks/delivery/address-policy.ts';
import { SecretBox } from '../../src/webhooks/store/secrets.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { startReceiver, waitUntil, type TestReceiver } from '../helpers/webhook-receiver.ts';
import { seedDelivery } from '../helpers/webhook-seed.ts';

const box = new SecretBox(randomBytes(32));
const SETTINGS = {
  concurrency: 64,
  endpointConcurrency: 16,
  pollIntervalMs: 60_000,
  timeoutMs: 5000,
  retry: { scheduleMs: [0, 100], retryAfterCapMs: 0 },
  disableAfterMs: 86_400_000,
  headerName: 'Service',
  retentionMs: 86_400_000 * 30,
};

/**
 * A real client whose results for URLs ending in `/poison` are rewritten by `poison`, and which hands
 * every result back only once `expected` attempts have finished: their outcomes then reach the
 * dispatcher in one turn of the event loop and are recorded as one batch.
 */
class FaultyClient extends CallbackClient {
  readonly #expected: number;
  readonly #poison: (result: AttemptResult) => AttemptResult;
  #finished: (() => void)[] = [];

  constructor(expected: number, poison: (result: AttemptResult) => AttemptResult) {
    super({
      timeoutMs: SETTINGS.timeoutMs,
      connectionsPerOrigin: 16,
      policy: new AddressPolicy(['loopback']),
      userAgent: 'test',
    });
    this.#expected = expected;
    this.#poison = poison;
  }

  override async post(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const result = await super.post(url, headers, body);
    await new Promise<void>((resolve) => {
      this.#finished.push(resolve);
      if (this.#finished.length === this.#expected) for (const release of this.#finished) release();
    });
    return url.endsWith('/poison') ? this.#poison(result) : result;
  }
}

for (const dialect of testDialects()) {
  describe(`recording webhook outcomes [${dialect}]`, () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;
    let receiver: TestReceiver;

    before(async () => {
      database = await createTestDatabase(dialect);
      handle = openDatabase(database.url);
      await migrateToLatest(handle);
      receiver = await startReceiver();
    });
    after(async () => {
      await receiver.close();
      await handle.db.destroy();
      await database.drop();
    });
    beforeEach(async () => {
      await handle.db.deleteFrom('webhook_endpoints').execute(); // deliveries and attempts cascade
      await handle.db.deleteFrom('webhook_events').execute();
      receiver.received.length = 0;
    });

    /** An endpoint at `path` on the receiver with one delivery due now; returns the delivery id. */
    const addDelivery = (path: string): Promise<string> =>
      seedDelivery(handle.db, box, { url: `${receiver.url}${path}` });

    /** Sends the poisoned delivery and four healthy ones in one claim; returns their ids and what was logged. */
    async function dispatchWithPoison(
      poison: (result: AttemptResult) => AttemptResult,
    ): Promise<{ poisoned: string; healthy: string[]; logs: { msg: string; deliveryId?: string }[] }> {
      const poisoned = await addDelivery('/poison');
      const healthy = [
        await addDelivery('/a'),
        await addDelivery('/b'),
        await addDelivery('/c'),
        await addDelivery('/d'),
      ];
      receiver.answer = (request) => ({ status: 200, body: request.url === '/poison' ? 'ok\u0000' : 'fine' });
      const logs: { msg: string; deliveryId?: string }[] = [];
      const log = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
      const client = new FaultyClient(5, poison);
      const dispatcher = new Dispatcher({
        db: handle.db,
        dialect: handle.dialect,
        box,
        outbox: new Outbox(handle.dialect, () => undefined),
        client,
        log,
        settings: SETTINGS,
      });
      try {
        dispatcher.start();
        await receiver.waitFor(5);
        let seen: string[] = [];
        await waitUntil(
          async () => (seen = await states(healthy)).every((s) => s === 'succeeded'),
          10_000,
          () => `the healthy deliveries were recorded: ${seen.join(', ')}`,
        );
        const givenUp = () => logs.some((l) => l.deliveryId === poisoned && /lease will expire/.test(l.msg));
        await waitUntil(
          async () => (seen = await states([poisoned]))[0] !== 'pending' || givenUp(),
          10_000,
          () =>
            `the poisoned outcome was recorded (${seen.join()}) or given up: ${JSON.stringify(logs.map((l) => l.msg))}`,
        );
      } finally {
        await dispatcher.stop(1000);
        await client.close();
      }
      return { poisoned, healthy, logs };
    }

    async function states(ids: string[]): Promise<string[]> {
      const rows = await handle.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'state'])
        .where('id', 'in', ids)
        .execute();
      return ids.map((id) => rows.find((r) => r.id === id)?.state ?? 'missing');
    }

    async function attempts(id: string) {
      return handle.db
        .selectFrom('webhook_attempts')
        .select(['status_code', 'response_excerpt'])
        .where('delivery_id', '=', id)
        .execute();
    }

    test('an outcome whose excerpt the database refuses is recorded without it, and the rest of its batch as usual', async () => {
      // The raw NUL, as it was before delivery/callback-client.ts replaced it: PostgreSQL's jsonb refuses it.
      const { poisoned, healthy } = await dispatchWithPoison((result) => ({ ...result, responseExcerpt: 'ok\u0000' }));
      assert.deepEqual(await states([poisoned]), ['succeeded'], 'the poisoned delivery progressed');
      const logged = await attempts(poisoned);
      assert.equal(logged.length, 1, 'its one attempt is logged');
      assert.equal(Number(logged[0]!.status_code), 200);
      assert.equal(
        logged[0]!.response_excerpt,
        dialect === 'postgres' ? null : 'ok\u0000',
        'only PostgreSQL refuses it',
      );
      for (const id of healthy)
        assert.deepEqual(
          (await attempts(id)).map((a) => a.response_excerpt),
          ['fine'],
          id,
        );
      assert.equal(receiver.received.length, 5, 'each sent once');
    });

    test('an outcome that cannot be recorded at all is logged by delivery id, and the rest of its batch is recorded', async () => {
      // duration_ms is NOT NULL, and JSON turns NaN into null: a row both databases refuse, with or without the excerpt.
      const { poisoned, healthy, logs } = await dispatchWithPoison((result) => ({ ...result, durationMs: Number.NaN }));
      assert.deepEqual(await states(healthy), ['succeeded', 'succeeded', 'succeeded', 'succeeded']);
      for (const id of healthy) assert.equal((await attempts(id)).length, 1, id);
      assert.deepEqual(await states([poisoned]), ['pending'], 'left to its lease, to be attempted again');
      assert.equal((await attempts(poisoned)).length, 0);
      assert.ok(
        logs.some((l) => l.deliveryId === poisoned && /lease will expire/.test(l.msg)),
        JSON.stringify(logs.map((l) => [l.msg, l.deliveryId])),
      );
      assert.ok(
        !logs.some((l) => l.deliveryId !== undefined && l.deliveryId !== poisoned),
        'no healthy outcome failed',
      );
    });
  });
}
