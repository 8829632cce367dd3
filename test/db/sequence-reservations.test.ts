// Values taken from a PostgreSQL sequence for requests that run at the same time, fetched together
// (src/db/postgres/sequence-reservations.ts): what a create's order id costs when creates share its round trip.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { MAX_VALUES_PER_FETCH, Reservations, reservationsOf } from '../../src/db/postgres/sequence-reservations.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';

const TEST_TIMEOUT = { timeout: 20_000 };

if (testDialects().includes('postgres')) {
  describe('PostgreSQL sequence reservations', () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;

    before(async () => {
      database = await createTestDatabase('postgres');
      handle = openDatabase(database.url);
    });
    after(async () => {
      await handle.db.destroy();
      await database.drop();
    });

    /** Reservations from a new sequence `name`, recording how many values each fetch asked for. */
    async function counted(name: string, create = true) {
      if (create) await sql`create sequence ${sql.id(name)}`.execute(handle.db);
      const fetches: number[] = [];
      const reservations = new Reservations<number>(async (count) => {
        fetches.push(count);
        const { rows } = await sql<{ value: number }>`select nextval(${name}::regclass) as value
          from generate_series(1, ${count}::int) order by 1`.execute(handle.db);
        return rows.map((row) => row.value);
      });
      return { reservations, fetches };
    }

    test(
      'takes asked for while a fetch is out share the next one; each value once, the first asker the lowest',
      TEST_TIMEOUT,
      async () => {
        const { reservations, fetches } = await counted('shared_seq');
        const values = await Promise.all(Array.from({ length: 50 }, () => reservations.take()));
        assert.deepEqual(fetches, [1, 49], 'the first take fetches alone, the 49 that waited for it in one fetch');
        assert.deepEqual(
          values,
          Array.from({ length: 50 }, (_, i) => i + 1),
          `values in the order asked: ${values.join(',')}`,
        );
        assert.equal(await reservations.take(), 51, 'nothing is kept in stock: the next take fetches');
        assert.deepEqual(fetches, [1, 49, 1]);
      },
    );

    test('one fetch takes at most MAX_VALUES_PER_FETCH values; the rest wait for the next', TEST_TIMEOUT, async () => {
      const { reservations, fetches } = await counted('bounded_seq');
      const asked = 1 + 2 * MAX_VALUES_PER_FETCH + 7;
      const values = await Promise.all(Array.from({ length: asked }, () => reservations.take()));
      assert.deepEqual(fetches, [1, MAX_VALUES_PER_FETCH, MAX_VALUES_PER_FETCH, 7]);
      assert.equal(new Set(values).size, asked, 'every value handed out once');
    });

    test('a failed fetch fails exactly the takes it was for; the next takes fetch again', TEST_TIMEOUT, async () => {
      const { reservations, fetches } = await counted('late_seq', false); // the sequence does not exist yet
      const first = reservations.take();
      const waiting = [reservations.take(), reservations.take()];
      await assert.rejects(first, /late_seq/);
      await assert.rejects(waiting[0]!, /late_seq/);
      await assert.rejects(waiting[1]!, /late_seq/);
      await sql`create sequence late_seq`.execute(handle.db);
      assert.deepEqual(await Promise.all([reservations.take(), reservations.take()]), [1, 2]);
      assert.deepEqual(fetches, [1, 2, 1, 1]);
    });

    test(
      'reservationsOf gives one Reservations per database and value, which fetches with nextval',
      TEST_TIMEOUT,
      async () => {
        await sql`create sequence order_like_seq`.execute(handle.db);
        const next = sql<number>`nextval('order_like_seq')`;
        const reservations = reservationsOf(handle.db, next);
        assert.equal(reservationsOf(handle.db, next), reservations, 'the same object for the same value');
        const values = await Promise.all(Array.from({ length: 5 }, () => reservations.take()));
        assert.deepEqual(values.map(Number), [1, 2, 3, 4, 5]);
      },
    );
  });
}
