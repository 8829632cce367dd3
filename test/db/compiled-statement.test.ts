// compiledStatement (src/db/compiled-statement.ts): a statement is built once per dialect and run again
// with new values, each landing where its name says, whatever order Kysely put the parameters in, and
// with the builder's own constants kept; inside a transaction it is part of that transaction.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle, type Db, type Executor } from '../../src/db/database.ts';
import { compiledStatement, placeholderRow } from '../../src/db/compiled-statement.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';

// The tests use a table of their own; the typed schema does not know it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = any;

interface Gadget {
  id: number;
  name: string;
  colour: string;
  size: number;
}

let builds = 0;

const insertGadget = compiledStatement<Gadget, unknown>((db, param) => {
  builds++;
  // Columns in another order than the values object's members, and a constant among them.
  return (db as AnyDb)
    .insertInto('gadgets')
    .values({ size: param('size'), kind: 'widget', colour: param('colour'), id: param('id'), name: param('name') });
});

/** The whole row from the run's values, each under its column's name. */
const insertWholeGadget = compiledStatement<Gadget & { kind: string }, unknown>((db, param) =>
  (db as AnyDb).insertInto('gadgets').values(placeholderRow(param, ['kind', 'size', 'name', 'id', 'colour'])),
);

/** Parameters on both sides of the SET / WHERE divide, and constants between them. */
const recolour = compiledStatement<{ id: number; colour: string; from: string }, Gadget>((db, param) =>
  (db as AnyDb)
    .updateTable('gadgets')
    .set({ colour: param('colour'), kind: 'repainted' })
    .where('kind', 'in', ['widget', 'repainted'])
    .where('colour', '=', param('from'))
    .where('id', '=', param('id'))
    .returning(['id', 'name', 'colour', 'size']),
);

/** node:sqlite gives rows without a prototype; compare them as plain objects. */
function plain(rows: readonly unknown[]): unknown[] {
  return rows.map((row) => ({ ...(row as object) }));
}

async function rows(db: Executor): Promise<unknown[]> {
  const { rows } = await sql`select id, name, colour, size, kind from gadgets order by id`.execute(db);
  return plain(rows);
}

for (const dialect of testDialects()) {
  describe(`compiledStatement [${dialect}]`, () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;
    let db: Db;

    before(async () => {
      database = await createTestDatabase(dialect);
      handle = openDatabase(database.url);
      db = handle.db;
      await sql`create table gadgets (id int primary key, name text not null, colour text not null, size int not null, kind text not null)`.execute(
        db,
      );
    });
    after(async () => {
      await handle.db.destroy();
      await database.drop();
    });

    test('each value lands in the column its name says; the builder runs once for this dialect', async () => {
      const before = builds;
      await insertGadget(db, { name: 'one', id: 1, colour: 'red', size: 10 });
      await insertGadget(db, { colour: 'blue', size: 20, id: 2, name: 'two' });
      assert.equal(builds - before, 1, 'built once for this database, not once per run');
      assert.deepEqual(await rows(db), [
        { id: 1, name: 'one', colour: 'red', size: 10, kind: 'widget' },
        { id: 2, name: 'two', colour: 'blue', size: 20, kind: 'widget' },
      ]);
    });

    test('parameters and constants in SET and WHERE keep their places; RETURNING rows come back', async () => {
      const { rows: changed } = await recolour(db, { id: 2, colour: 'green', from: 'blue' });
      assert.deepEqual(plain(changed), [{ id: 2, name: 'two', colour: 'green', size: 20 }]);
      const { rows: missed } = await recolour(db, { id: 1, colour: 'green', from: 'blue' });
      assert.deepEqual(missed, [], 'gadget 1 is red: the WHERE on colour must have used the new value');
      assert.deepEqual(await rows(db), [
        { id: 1, name: 'one', colour: 'red', size: 10, kind: 'widget' },
        { id: 2, name: 'two', colour: 'green', size: 20, kind: 'repainted' },
      ]);
    });

    test('placeholderRow: every column takes the run value of its own name', async () => {
      await insertWholeGadget(db, { id: 9, name: 'nine', colour: 'white', size: 90, kind: 'spare' });
      const { rows: nine } = await sql`select id, name, colour, size, kind from gadgets where id = 9`.execute(db);
      assert.deepEqual(plain(nine), [{ id: 9, name: 'nine', colour: 'white', size: 90, kind: 'spare' }]);
      await sql`delete from gadgets where id = 9`.execute(db);
    });

    test('inside a transaction it runs on the transaction: a rollback takes it back', async () => {
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await insertGadget(trx, { id: 3, name: 'three', colour: 'grey', size: 30 });
          assert.equal((await rows(trx)).length, 3);
          throw new Error('roll back');
        }),
        /roll back/,
      );
      assert.deepEqual(
        (await rows(db)).map((r) => (r as Gadget).id),
        [1, 2],
      );
    });
  });
}

if (testDialects().length === 2) {
  test('one statement serves both dialects, each with its own SQL', async () => {
    const seen: string[] = [];
    const probe = compiledStatement<{ n: number }, { n: number }>((db, param) => {
      seen.push(db.getExecutor().adapter.constructor.name);
      return db.selectNoFrom(sql<number>`${param('n')} + 1`.as('n'));
    });
    const sqlite = await createTestDatabase('sqlite');
    const postgres = await createTestDatabase('postgres');
    const handles = [openDatabase(sqlite.url), openDatabase(postgres.url)];
    try {
      for (const { db } of handles) {
        for (const n of [1, 41]) {
          const { rows } = await probe(db, { n });
          assert.equal(Number(rows[0]?.n), n + 1);
        }
      }
      assert.equal(seen.length, 2, `built for: ${seen.join(', ')}`);
      assert.notEqual(seen[0], seen[1]);
    } finally {
      for (const { db } of handles) await db.destroy();
      await sqlite.drop();
      await postgres.drop();
    }
  });
}

// direct-read.ts: on the embedded database a compiled SELECT goes straight to the driver's read,
// skipping Kysely's executor, but only between Kysely's first use and its destroy; inside a transaction
// compiled statements go straight to the transaction's connection once Kysely has named it.
describe("compiled SELECTs on SQLite skip Kysely's executor", () => {
  const gadgetById = compiledStatement<{ id: number }, Gadget>((db, param) =>
    (db as AnyDb).selectFrom('gadgets').select(['id', 'name', 'colour', 'size']).where('id', '=', param('id')),
  );

  /** How many connections Kysely has handed out since: a read that skips its executor takes none. */
  function connectionsOf(db: Executor): () => number {
    const executor = db.getExecutor() as unknown as { provideConnection: (...args: unknown[]) => Promise<unknown> };
    const provide = executor.provideConnection.bind(executor);
    let count = 0;
    executor.provideConnection = (...args) => {
      count++;
      return provide(...args);
    };
    return () => count;
  }

  /** A fresh SQLite database with the gadgets table for `use`, destroyed and dropped afterwards. */
  async function withGadgets(use: (db: Db) => Promise<void>): Promise<void> {
    const database = await createTestDatabase('sqlite');
    const { db } = openDatabase(database.url);
    try {
      await sql`create table gadgets (id int primary key, name text not null, colour text not null, size int not null, kind text)`.execute(
        db,
      );
      await use(db);
    } finally {
      await db.destroy();
      await database.drop();
    }
  }

  test('the first use goes through Kysely (which starts the driver), later reads do not', async () => {
    const database = await createTestDatabase('sqlite');
    const { db } = openDatabase(database.url);
    try {
      const connections = connectionsOf(db);
      await sql`create table gadgets (id int primary key, name text not null, colour text not null, size int not null)`.execute(
        db,
      );
      await sql`insert into gadgets values (1, 'one', 'red', 10)`.execute(db);
      const used = connections();
      const { rows: found } = await gadgetById(db, { id: 1 });
      assert.deepEqual(plain(found), [{ id: 1, name: 'one', colour: 'red', size: 10 }]);
      assert.deepEqual(plain((await gadgetById(db, { id: 2 })).rows), []);
      assert.equal(connections(), used, 'a compiled SELECT on the database took a connection from Kysely');
    } finally {
      await db.destroy();
      await database.drop();
    }

    const fresh = await createTestDatabase('sqlite');
    const handle = openDatabase(fresh.url);
    try {
      const connections = connectionsOf(handle.db);
      await assert.rejects(gadgetById(handle.db, { id: 1 }), /no such table/);
      assert.equal(connections(), 1, 'the first query of a database must start it through Kysely');
    } finally {
      await handle.db.destroy();
      await fresh.drop();
    }
  });

  test("inside a transaction the read is the transaction's; outside it sees only what was committed", async () => {
    const database = await createTestDatabase('sqlite');
    const { db } = openDatabase(database.url);
    try {
      await sql`create table gadgets (id int primary key, name text not null, colour text not null, size int not null)`.execute(
        db,
      );
      await db.transaction().execute(async (trx) => {
        await sql`insert into gadgets values (5, 'five', 'blue', 50)`.execute(trx);
        assert.equal((await gadgetById(trx, { id: 5 })).rows.length, 1, 'the transaction does not see its own row');
        assert.equal((await gadgetById(db, { id: 5 })).rows.length, 0, 'a read outside saw an uncommitted row');
      });
      assert.equal((await gadgetById(db, { id: 5 })).rows.length, 1, 'the committed row is not seen');
    } finally {
      await db.destroy();
      await database.drop();
    }
  });

  test('in a transaction only the first compiled statement asks Kysely for the connection; a rollback takes them all back', async () => {
    await withGadgets(async (db) => {
      const asked: number[] = [];
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          const connections = connectionsOf(trx);
          await insertGadget(trx, { id: 1, name: 'one', colour: 'red', size: 1 });
          asked.push(connections());
          await insertGadget(trx, { id: 2, name: 'two', colour: 'red', size: 2 });
          const { rows: repainted } = await recolour(trx, { id: 2, colour: 'green', from: 'red' });
          assert.deepEqual(plain(repainted), [{ id: 2, name: 'two', colour: 'green', size: 2 }]);
          assert.equal((await gadgetById(trx, { id: 1 })).rows.length, 1, 'the transaction does not see its own row');
          asked.push(connections());
          throw new Error('roll back');
        }),
        /roll back/,
      );
      assert.deepEqual(asked, [1, 1], 'statements after the first took the connection from Kysely again');
      assert.deepEqual(await rows(db), [], 'the rollback left rows written by compiled statements');
    });
  });

  test("a transaction with a plugin keeps Kysely's path, so the plugin still sees every result", async () => {
    await withGadgets(async (db) => {
      await db.transaction().execute(async (trx) => {
        const seen: number[] = [];
        const counting = trx.withPlugin({
          transformQuery: ({ node }) => node,
          transformResult: async ({ result }) => {
            seen.push(result.rows.length);
            return result;
          },
        });
        await insertGadget(counting, { id: 1, name: 'one', colour: 'red', size: 1 });
        await recolour(counting, { id: 1, colour: 'green', from: 'red' });
        assert.deepEqual(seen, [0, 1], 'a result did not reach the plugin');
      });
    });
  });

  test('a compiled statement on a transaction that has ended is refused, not run as a write of its own', async () => {
    await withGadgets(async (db) => {
      let ended: Executor | undefined;
      await db.transaction().execute(async (trx) => {
        await insertGadget(trx, { id: 1, name: 'one', colour: 'red', size: 1 });
        ended = trx;
      });
      await assert.rejects(
        insertGadget(ended!, { id: 2, name: 'two', colour: 'red', size: 2 }),
        /already (ended|committed)/,
      );
      assert.deepEqual(
        (await rows(db)).map((row) => (row as Gadget).id),
        [1],
        'a statement on the ended transaction was written',
      );
    });
  });

  test('after destroy the read is refused as Kysely refuses any query', async () => {
    const database = await createTestDatabase('sqlite');
    const { db } = openDatabase(database.url);
    await sql`create table gadgets (id int primary key, name text not null, colour text not null, size int not null)`.execute(
      db,
    );
    await db.destroy();
    try {
      await assert.rejects(gadgetById(db, { id: 1 }), /driver has already been destroyed/);
    } finally {
      await database.drop();
    }
  });
});
