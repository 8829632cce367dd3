// Group commit on the embedded SQLite database (src/db/sqlite/sqlite-group-commit.ts), through Kysely on a
// real file. "Durable" is checked from outside: a separate connection to the same file sees a row only
// once the COMMIT that holds it has returned (WAL, synchronous=FULL: returned means on disk).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { afterCommit } from '../../src/db/after-commit.ts';
import { openDatabase, type DatabaseHandle, type Db } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { withDeadline } from '../helpers/deadline.ts';

// The tests use a table of their own; the typed schema does not know it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = any;

describe('SQLite group commit', () => {
  let dir: string;
  let handle: DatabaseHandle;
  let db: AnyDb;
  let outside: DatabaseSync;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'signet-group-commit-'));
    handle = openDatabase(`sqlite:${join(dir, 'g.db')}`, { sqliteSynchronous: 'FULL' });
    db = handle.db as AnyDb;
    await sql`create table items (id integer primary key, name text not null unique)`.execute(handle.db);
    await sql`create table parents (id integer primary key)`.execute(handle.db);
    await sql`create table children (id integer primary key, parent_id integer not null references parents (id) deferrable initially deferred)`.execute(
      handle.db,
    );
    outside = new DatabaseSync(join(dir, 'g.db'), { readOnly: true });
  });

  after(async () => {
    outside.close();
    await handle.db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const visibleOutside = (name: string): boolean =>
    outside.prepare('select 1 from items where name = ?').get(name) !== undefined;
  const stats = () => ({ ...handle.groupCommit! });
  const insert = (trx: AnyDb, name: string) => trx.insertInto('items').values({ name }).execute();

  test('50 concurrent transactions share a few COMMITs, and each result comes only once its row is on disk', async () => {
    const before = stats();
    const seenAtResolve: boolean[] = [];
    await withDeadline(
      Promise.all(
        Array.from({ length: 50 }, (_, n) =>
          (db as Db)
            .transaction()
            .execute((trx) => insert(trx, `a${n}`))
            .then(() => seenAtResolve.push(visibleOutside(`a${n}`))),
        ),
      ),
      10_000,
      'the 50 transactions',
    );
    const used = stats();
    assert.equal(used.members - before.members, 50, JSON.stringify({ before, used }));
    assert.ok(used.commits - before.commits <= 5, `50 transactions took ${used.commits - before.commits} COMMITs`);
    assert.deepEqual(
      seenAtResolve.filter((seen) => !seen),
      [],
      'a transaction resolved before its row could be read from another connection',
    );
  });

  test('a member that fails rolls back only its own work; the others in its group commit, after it has been told', async () => {
    const before = stats();
    const okTrx = (db as Db).transaction().execute((trx) => insert(trx, 'kept'));
    const failing = (db as Db).transaction().execute(async (trx) => {
      await insert(trx, 'undone');
      await insert(trx, 'kept'); // unique violation: this member fails
    });
    const third = (db as Db).transaction().execute((trx) => insert(trx, 'kept-too'));
    let visibleWhenRefused: boolean | undefined;
    const refused = failing.then(
      () => assert.fail('the duplicate insert succeeded'),
      (err: Error) => {
        visibleWhenRefused = visibleOutside('kept');
        return err;
      },
    );
    const [, error] = await withDeadline(Promise.all([okTrx, refused, third]), 10_000, 'the three transactions');
    assert.match(String((error as Error).message), /UNIQUE/);
    assert.equal(visibleWhenRefused, true, 'the failure was reported before the group it ran in had committed');
    assert.equal(visibleOutside('undone'), false);
    assert.equal(visibleOutside('kept-too'), true);
    const used = stats();
    assert.equal(used.commits - before.commits, 1, JSON.stringify({ before, used }));
    assert.equal(used.rolledBack - before.rolledBack, 1);
  });

  test('a COMMIT that fails fails every member of its group, and keeps none of their work', async () => {
    // A deferred foreign key is checked at COMMIT: the group's commit itself fails.
    const innocent = (db as Db).transaction().execute((trx) => insert(trx, 'lost-with-group'));
    const culprit = (db as Db)
      .transaction()
      .execute((trx) => (trx as AnyDb).insertInto('children').values({ parent_id: 999 }).execute());
    const outcomes = await withDeadline(Promise.allSettled([innocent, culprit]), 10_000, 'the two transactions');
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['rejected', 'rejected'],
    );
    assert.match(String((outcomes[0] as PromiseRejectedResult).reason), /FOREIGN KEY/);
    assert.equal(visibleOutside('lost-with-group'), false);
    // The writer is usable again.
    await (db as Db).transaction().execute((trx) => insert(trx, 'after-failed-commit'));
    assert.equal(visibleOutside('after-failed-commit'), true);
  });

  test('a read outside a transaction neither waits for a running one nor sees its uncommitted rows', async () => {
    let finish!: () => void;
    const holding = new Promise<void>((resolve) => (finish = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const running = (db as Db).transaction().execute(async (trx) => {
      await insert(trx, 'in-progress');
      entered();
      await holding;
    });
    await withDeadline(inside, 5000, 'the transaction to start');
    const rows = await withDeadline(
      db.selectFrom('items').select('name').where('name', '=', 'in-progress').execute(),
      5000,
      'a read while a transaction holds the writer',
    );
    assert.deepEqual(rows, []);
    finish();
    await withDeadline(running, 5000, 'the held transaction');
    const after = await db.selectFrom('items').select('name').where('name', '=', 'in-progress').execute();
    assert.deepEqual(
      after.map((row: { name: string }) => row.name),
      ['in-progress'],
    );
  });

  test('a write outside a transaction is a member too: its promise resolves once durable', async () => {
    const before = stats();
    await withDeadline(
      Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          insert(db, `plain${n}`).then(() => assert.ok(visibleOutside(`plain${n}`), `plain${n} not yet durable`)),
        ),
      ),
      10_000,
      'the 20 writes',
    );
    const used = stats();
    assert.equal(used.members - before.members, 20);
    assert.ok(used.commits - before.commits <= 3, `20 writes took ${used.commits - before.commits} COMMITs`);
  });

  test('afterCommit runs once the transaction is durable, and never for one that rolls back', async () => {
    const ran: Array<{ name: string; durable: boolean }> = [];
    const hook = (trx: AnyDb, name: string) =>
      afterCommit(trx, () => ran.push({ name, durable: visibleOutside(name) }));
    const committed = (db as Db).transaction().execute(async (trx) => {
      await insert(trx, 'hooked');
      assert.equal(await hook(trx, 'hooked'), true);
    });
    const rolledBack = (db as Db).transaction().execute(async (trx) => {
      await insert(trx, 'hooked-undone');
      assert.equal(await hook(trx, 'hooked-undone'), true);
      throw new Error('roll back');
    });
    await withDeadline(Promise.allSettled([committed, rolledBack]), 10_000, 'the two transactions');
    await withDeadline(
      (async () => {
        while (ran.length === 0) await new Promise((resolve) => setImmediate(resolve));
      })(),
      5000,
      () => `afterCommit callbacks: ${JSON.stringify(ran)}`,
    );
    assert.deepEqual(ran, [{ name: 'hooked', durable: true }]);
    assert.equal(
      await afterCommit(handle.db, () => undefined),
      false,
      'outside a transaction there is no commit to wait for',
    );
  });
  test('a statement Kysely sends after its failed transaction ended is refused, not committed on its own', async () => {
    await insert(db, 'taken');
    // Promise.all: the first insert fails (unique), the callback rejects and Kysely rolls back while the
    // second branch has yet to send its insert on the transaction's connection.
    let stray: Promise<unknown> | undefined;
    const failed = (db as Db).transaction().execute(async (trx) => {
      const first = insert(trx, 'taken');
      // Sent once the rollback has begun: while the member waits for its group's COMMIT, before Kysely
      // marks the transaction rolled back (after that Kysely refuses it itself).
      stray = (async () => {
        await first.catch(() => undefined);
        await new Promise((resolve) => setImmediate(resolve));
        await insert(trx, 'stray');
      })();
      await Promise.all([first, stray]);
    });
    await withDeadline(assert.rejects(failed, /UNIQUE/), 10_000, 'the failing transaction');
    await withDeadline(
      assert.rejects(stray!, /transaction has already ended|Transaction is already rolled back/),
      10_000,
      'the statement sent after the end',
    );
    await insert(db, 'after-stray');
    const rows = outside.prepare("select name from items where name in ('stray', 'after-stray')").all();
    assert.deepEqual(
      rows.map((r) => r.name),
      ['after-stray'],
      'the second insert of the failed transaction must not be on disk',
    );
  });

  /** The writer's PRAGMA temp_store, read inside a transaction (outside one, reads go to the reader). */
  const writerTempStore = async (): Promise<number> =>
    (await (db as Db).transaction().execute((trx) => sql<{ temp_store: number }>`pragma temp_store`.execute(trx)))
      .rows[0]!.temp_store;

  test("the writer keeps temporary files in memory (2), so a member's savepoint journal never goes to a file", async () => {
    assert.equal(await writerTempStore(), 2);
    const reader = (await sql<{ temp_store: number }>`pragma temp_store`.execute(handle.db)).rows[0]?.temp_store;
    assert.equal(reader, 1, 'the read connection keeps them on file (FILE)');
  });

  test('setTempStore waits for the open group, commits it, and applies between transactions', async () => {
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    const member = (db as Db).transaction().execute(async (trx) => {
      await insert(trx, 'held-while-pragma');
      await holding;
    });
    let applied = false;
    let pragma: Promise<unknown> | undefined;
    try {
      await new Promise((resolve) => setImmediate(resolve));
      assert.ok(handle.setTempStore, 'a SQLite handle can set temp_store');
      pragma = handle.setTempStore('FILE').then(() => (applied = true));
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(applied, false, 'not while a member holds the writer');
    } finally {
      release(); // never leave the writer held: the suite's after() would wait for it
    }
    await withDeadline(Promise.all([member, pragma]), 10_000, 'the member and the pragma');
    assert.ok(visibleOutside('held-while-pragma'), 'the group was committed before the pragma');
    assert.equal(await writerTempStore(), 1);
    await handle.setTempStore('MEMORY');
    assert.equal(await writerTempStore(), 2);
  });
});

describe('SQLite migrations and temp_store', () => {
  test('migrations build their indexes with temporary files on disk; the service then writes with them in memory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-temp-store-'));
    const handle = openDatabase(`sqlite:${join(dir, 'm.db')}`);
    const seen: string[] = [];
    const setTempStore = handle.setTempStore;
    assert.ok(setTempStore, 'a SQLite handle can set temp_store');
    handle.setTempStore = async (mode) => {
      seen.push(mode);
      await setTempStore(mode);
    };
    try {
      await migrateToLatest(handle);
      assert.deepEqual(seen, ['FILE', 'MEMORY']);
      const writer = await handle.db
        .transaction()
        .execute((trx) => sql<{ temp_store: number }>`pragma temp_store`.execute(trx));
      assert.equal(writer.rows[0]?.temp_store, 2);
    } finally {
      await handle.db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
