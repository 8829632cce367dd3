// The migrator's view of a PostgreSQL database (src/db/postgres/current-schema-introspector.ts): it sees the
// current schema only, so other sessions creating and dropping schemas in the same database (other
// test runs, other apps) can never fail a migration or the /readyz check. PostgreSQL only: SQLite
// has one schema per file.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest, migrationsAreCurrent } from '../../src/db/migrate.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { withDeadline } from '../helpers/deadline.ts';

const SCHEMA_CHURNS = 20;
const PARALLEL_CHECKERS = 2;
const TABLES_PER_CHURNED_SCHEMA = 30;
/** The churns and checks take seconds; this only turns a stuck statement into a failure that says where. */
const CHURN_DEADLINE_MS = 120_000;

if (testDialects().includes('postgres'))
  describe('PostgreSQL introspection stays in the current schema', () => {
    let database: TestDatabase;
    let other: TestDatabase;
    let handle: DatabaseHandle;

    before(async () => {
      database = await createTestDatabase('postgres');
      other = await createTestDatabase('postgres');
      handle = openDatabase(database.url);
      await migrateToLatest(handle);
    });
    after(async () => {
      await handle.db.destroy();
      await database.drop();
      await other.drop();
    });

    test('lists the tables of the current schema with their columns, and nothing from another schema', async () => {
      const admin = openDatabase(other.url);
      await admin.db.schema
        .createTable('not_ours')
        .addColumn('id', 'bigserial', (c) => c.primaryKey())
        .execute();
      await admin.db.destroy();

      const tables = await handle.db.introspection.getTables();
      const names = tables.map((t) => t.name);
      assert.ok(names.includes('orders') && names.includes('webhook_events'), names.join(', '));
      assert.ok(!names.includes('not_ours'));
      assert.ok(!names.includes('kysely_migration'), 'Kysely bookkeeping is hidden unless asked for');
      assert.ok(
        (await handle.db.introspection.getTables({ withInternalKyselyTables: true })).some(
          (t) => t.name === 'kysely_migration',
        ),
      );
      const schema = new URL(database.url).searchParams.get('options')?.split('=')[1];
      assert.ok(tables.every((t) => t.schema === schema));
      const seq = tables.find((t) => t.name === 'webhook_events')?.columns.find((c) => c.name === 'seq');
      assert.ok(seq, 'webhook_events.seq is listed');
      assert.equal(seq.isNullable, false);
    });

    test('migration checks keep answering while another session drops and recreates schemas', async () => {
      // Kysely's stock introspector failed this in most runs ("relation … does not exist"); the first test
      // above is the deterministic check that other schemas are never read.
      const churner = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
      await churner.connect();
      const schemas = [0, 1, 2].map((i) => `churn_${process.pid}_${i}`);
      let stop = false;
      let churns = 0;
      const churn = (async () => {
        while (!stop) {
          const schema = schemas[churns % schemas.length];
          const tables = Array.from(
            { length: TABLES_PER_CHURNED_SCHEMA },
            (_, i) => `create table ${schema}.t${i} (id bigserial primary key, a text, b text, c text, d text, e text)`,
          );
          await churner.query(
            [`drop schema if exists ${schema} cascade`, `create schema ${schema}`, ...tables].join(';'),
          );
          churns++;
        }
      })();
      // A failed churn would leave the checkers below waiting for churns that never come: stop them, and the
      // `await churn` in the finally reports the churn's error.
      churn.catch(() => (stop = true));
      let checks = 0;
      const checkUntilDone = async () => {
        while (churns < SCHEMA_CHURNS && !stop) {
          assert.equal(await migrationsAreCurrent(handle), true);
          await migrateToLatest(handle);
          checks++;
        }
      };
      try {
        await withDeadline(
          Promise.all(Array.from({ length: PARALLEL_CHECKERS }, checkUntilDone)),
          CHURN_DEADLINE_MS,
          () => `${churns} of ${SCHEMA_CHURNS} schema churns, ${checks} checks`,
        );
      } finally {
        stop = true;
        await withDeadline(churn, 30_000, () => `the churner's last statement (${churns} churns)`);
        await churner.query(schemas.map((s) => `drop schema if exists ${s} cascade`).join(';'));
        await churner.end();
      }
      assert.ok(checks > SCHEMA_CHURNS, `${churns} schema churns against ${checks} checks`);
    });
  });
