// PostgreSQL named prepared statements (src/db/database.ts, DATABASE_PREPARED_STATEMENTS): a
// parameterised statement is prepared once per connection; a `*` select list is never prepared, so a
// column another instance's migration adds cannot make it fail ("cached plan must not change result
// type"); the setting turns preparing off.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle, type Db } from '../../src/db/database.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';

// The tests use a table of their own; the typed schema does not know it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = any;

/** The statements the connection `db` is bound to has prepared. */
async function preparedOn(db: Db): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
  return rows.map((r) => r.statement);
}

if (testDialects().includes('postgres')) {
  describe('PostgreSQL prepared statements', () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;
    let unprepared: DatabaseHandle;

    before(async () => {
      database = await createTestDatabase('postgres');
      handle = openDatabase(database.url);
      unprepared = openDatabase(database.url, { preparedStatements: false });
      await sql`create table gadgets (id int primary key, name text not null)`.execute(handle.db);
      await sql`insert into gadgets values (1, 'one'), (2, 'two')`.execute(handle.db);
    });
    after(async () => {
      await handle.db.destroy();
      await unprepared.db.destroy();
      await database.drop();
    });

    test('a parameterised statement is prepared on its connection and runs again from there', async () => {
      await handle.db.connection().execute(async (db) => {
        const read = () => (db as AnyDb).selectFrom('gadgets').select('name').where('id', '=', 2).execute();
        assert.deepEqual(await read(), [{ name: 'two' }]);
        assert.deepEqual(await read(), [{ name: 'two' }]);
        const prepared = await preparedOn(db);
        const matching = prepared.filter((s) => s.includes('from "gadgets"') && s.includes('"id" = $1'));
        assert.equal(matching.length, 1, `prepared statements: ${JSON.stringify(prepared)}`);
      });
    });

    test('a select of * is not prepared, and keeps working when a migration adds a column', async () => {
      await handle.db.connection().execute(async (db) => {
        const readAll = () => (db as AnyDb).selectFrom('gadgets').selectAll().where('id', '=', 1).execute();
        assert.deepEqual(await readAll(), [{ id: 1, name: 'one' }]);
        assert.deepEqual(
          (await preparedOn(db)).filter((s) => s.includes('select *')),
          [],
          'a select of * must not be prepared',
        );
        await sql`alter table gadgets add column colour text`.execute(db);
        try {
          assert.deepEqual(await readAll(), [{ id: 1, name: 'one', colour: null }]);
        } finally {
          await sql`alter table gadgets drop column colour`.execute(db);
        }
      });
    });

    test('DATABASE_PREPARED_STATEMENTS=false prepares nothing', async () => {
      await unprepared.db.connection().execute(async (db) => {
        await (db as AnyDb).selectFrom('gadgets').select('name').where('id', '=', 1).execute();
        assert.deepEqual(await preparedOn(db), []);
      });
    });
  });
}
