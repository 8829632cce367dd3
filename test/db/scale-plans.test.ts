// Query plans that keep cost flat as data grows (figures: bench/scale/scale.ts, docs/benchmarks.md "Cost as data grows and
// memory"). Each test captures the SQL a repository function really runs (a Kysely plugin compiles every query it sees)
// and asks the database for its plan, so a plan that would read the whole table at scale fails here on an
// empty database:
// - an end user's event feed (GET /api/events with a user token) reads that customer's events through
//   webhook_events_customer_position_idx (migration 0013), not the whole feed after the cursor;
// - the event retention purge looks up whether an event still waits for a delivery through the event's own
//   deliveries, not through every pending delivery (SQLite, which plans without statistics);
// - the audit purge picks each batch from audit_log_occurred_at (in seq order SQLite walked the whole
//   table from its oldest entry, and its last batch read every entry kept).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  sql,
  type CompiledQuery,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type UnknownRow,
} from 'kysely';
import { purgeAuditBefore } from '../../src/audit/retention.ts';
import { type DatabaseHandle, type Db } from '../../src/db/database.ts';
import { listEvents, purgeEvents, START } from '../../src/webhooks/store/events.repository.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';

/** Compiles every query that runs through it (the SQL and parameters the database receives). */
class Capture implements KyselyPlugin {
  readonly queries: CompiledQuery[] = [];
  db!: Db;

  transformQuery(args: PluginTransformQueryArgs) {
    this.queries.push(this.db.getExecutor().compileQuery(args.node, args.queryId));
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

function capture(db: Db): { db: Db; queries: CompiledQuery[] } {
  const plugin = new Capture();
  plugin.db = db;
  return { db: db.withPlugin(plugin), queries: plugin.queries };
}

/** The plan of a captured query, one line per step (SQLite EXPLAIN QUERY PLAN, PostgreSQL EXPLAIN). */
async function planOf(handle: DatabaseHandle, query: CompiledQuery): Promise<string> {
  if (handle.dialect === 'sqlite') {
    const result = await handle.db.executeQuery<{ detail: string }>({
      ...query,
      sql: `EXPLAIN QUERY PLAN ${query.sql}`,
    } as CompiledQuery<{ detail: string }>);
    return result.rows.map((r) => r.detail).join('\n');
  }
  // An empty table is read whole whatever the indexes: the plan is asked for as if sequential scans
  // were costly, which is what they are once the table is large.
  return handle.db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    const result = await trx.executeQuery<{ 'QUERY PLAN': string }>({
      ...query,
      sql: `EXPLAIN ${query.sql}`,
    } as CompiledQuery<{ 'QUERY PLAN': string }>);
    return result.rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

for (const dialect of testDialects()) {
  describe(`plans that stay flat at scale [${dialect}]`, () => {
    let handle: DatabaseHandle;

    useMigratedDatabase(dialect, (opened) => {
      handle = opened;
    });

    test("an end user's event feed reads that customer's events by webhook_events_customer_position_idx", async () => {
      const { db, queries } = capture(handle.db);
      await listEvents(
        db,
        dialect,
        { owner: undefined, customerId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301' },
        { after: { tx: '0', seq: 10 }, types: undefined, limit: 51 },
      );
      assert.equal(queries.length, 1, `one query: ${queries.map((q) => q.sql).join('\n')}`);
      const plan = await planOf(handle, queries[0]!);
      assert.match(plan, /webhook_events_customer_position_idx/, `the feed's plan:\n${plan}\nfor\n${queries[0]!.sql}`);
    });

    test("a client's feed is still read in feed order from the cursor", async () => {
      const { db, queries } = capture(handle.db);
      await listEvents(
        db,
        dialect,
        { owner: 'client-a', customerId: undefined },
        {
          after: START,
          types: undefined,
          limit: 51,
        },
      );
      const plan = await planOf(handle, queries[0]!);
      assert.doesNotMatch(plan, /customer_position_idx|SCAN webhook_events\b|Seq Scan/, `the feed's plan:\n${plan}`);
    });

    test('the audit purge picks each batch by time through audit_log_occurred_at', async () => {
      const { db, queries } = capture(handle.db);
      await purgeAuditBefore(db, new Date('2001-01-01T00:00:00.000Z'));
      const batches = queries.filter((q) => /^select/i.test(q.sql) && /audit_log/.test(q.sql));
      assert.ok(batches.length >= 1, `the purge's statements:\n${queries.map((q) => q.sql).join('\n')}`);
      for (const query of batches) {
        const plan = await planOf(handle, query);
        assert.match(plan, /audit_log_occurred_at/, `the batch's plan:\n${plan}\nfor\n${query.sql}`);
        assert.doesNotMatch(plan, /SCAN audit_log\b/, `no walk of the whole table:\n${plan}`);
      }
    });

    if (dialect === 'sqlite')
      test('the event purge finds waiting deliveries through the event, not through every pending delivery', async () => {
        const { db, queries } = capture(handle.db);
        // An expired event for the purge to look at (no deliveries: nothing else is needed for the plan).
        await handle.db
          .insertInto('webhook_events')
          .values({
            id: 'evt_00000000000000000000000000000001',
            type: 'order.created',
            occurred_at: '2000-01-01T00:00:00.000Z',
            data: '{}',
            owner: null,
            customer_id: null,
            order_id: null,
          })
          .execute();
        assert.equal(await purgeEvents(db, new Date('2001-01-01T00:00:00.000Z')), 1);
        const pendingChecks = queries.filter((q) => /state \|\| ''/.test(q.sql));
        assert.ok(pendingChecks.length >= 2, `the purge's statements:\n${queries.map((q) => q.sql).join('\n')}`);
        for (const query of pendingChecks) {
          const plan = await planOf(handle, query);
          assert.doesNotMatch(plan, /\(state=\?/, `no lookup by state:\n${plan}\nfor\n${query.sql}`);
          assert.match(plan, /webhook_deliveries_2 \(event_id=\?\)/, `by the event's key:\n${plan}\nfor\n${query.sql}`);
        }
      });
  });
}
