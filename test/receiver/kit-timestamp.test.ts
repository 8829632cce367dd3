// The receiver kit's replay check on the signed Timestamp (docs/guides/producing-webhooks.md, "What a delivery looks
// like"): the producer's ISO 8601 with milliseconds, and whole seconds as older producers sent them, both held to
// the same 5-minute window in the past and the future, to the millisecond. Every test dialect.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { acceptDelivery, openInbox, type Inbox } from '../../src/receiver/index.ts';
import { delivery, SECRET } from './kit-helpers.ts';

const NOW = new Date('2026-11-24T10:05:00.500Z');
const WINDOW_MS = 5 * 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** [Timestamp text, accepted] around both edges of the window, in every accepted form. */
const CASES: [string, boolean][] = [
  [iso(NOW.getTime()), true],
  [iso(NOW.getTime() - WINDOW_MS), true],
  [iso(NOW.getTime() - WINDOW_MS - 1), false],
  [iso(NOW.getTime() + WINDOW_MS), true],
  [iso(NOW.getTime() + WINDOW_MS + 1), false],
  ['2026-11-24T10:00:01Z', true], // whole seconds, no fraction (an older producer)
  ['2026-11-24T10:00:01.000Z', true], // whole seconds with a zero fraction (Signet before milliseconds)
  ['2026-11-24T10:00:00Z', false], // 300.5 s old
  ['2026-11-24T10:10:00Z', true],
  ['2026-11-24T10:10:01Z', false],
  ['2026-11-24T10:00:00.500123Z', true], // more digits than milliseconds: RFC 3339 §5.6 allows any
  ['2026-11-24T11:00:00.999+01:00', true], // an offset other than Z
];

for (const dialect of testDialects()) {
  describe(`the kit's Timestamp window on ${dialect}`, () => {
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

    for (const [timestampText, accepted] of CASES) {
      test(`${accepted ? 'accepts' : 'refuses as stale'} Timestamp ${timestampText} at ${NOW.toISOString()}`, async () => {
        const d = delivery({ timestampText });
        const result = await acceptDelivery(
          { sources: { orders: [SECRET] }, inbox, now: () => NOW },
          { source: 'orders', rawBody: Buffer.from(d.body), headers: d.headers },
        );
        if (accepted) assert.equal(result.status, 200, JSON.stringify(result.problem));
        else {
          assert.equal(result.status, 401, JSON.stringify(result));
          assert.match(String(result.problem?.type), /stale-timestamp$/);
        }
      });
    }

    test('a delivery as the producer sends it carries milliseconds and is accepted', async () => {
      const d = delivery({ timestamp: NOW });
      assert.equal((JSON.parse(d.body) as { Timestamp: string }).Timestamp, '2026-11-24T10:05:00.500Z');
      const result = await acceptDelivery(
        { sources: { orders: [SECRET] }, inbox, now: () => NOW },
        { source: 'orders', rawBody: Buffer.from(d.body), headers: d.headers },
      );
      assert.equal(result.status, 200, JSON.stringify(result.problem));
    });
  });
}
