// Retention purges delete in bounded batches, so a purge never holds a long lock (docs/security.md, "The audit trail"):
// the webhook event purge, the idempotency-key purge and the audit trail purge never issue a DELETE that touches more
// than its batch, however large the backlog, so a purge never holds the writer for longer than one batch. Each purge
// runs through a Kysely plugin that records every DELETE and the rows it removed: an unbounded DELETE
// (the whole backlog in one statement) fails these tests. What is kept (recent rows, events a delivery
// still waits for) stays.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  DeleteQueryNode,
  TableNode,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';
import { recordAudit } from '../../src/audit/audit.ts';
import { purgeAuditBefore } from '../../src/audit/retention.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import { type Db, type DatabaseHandle } from '../../src/db/database.ts';
import { purgeExpiredKeys } from '../../src/idempotency/idempotency.ts';
import { purgeEvents } from '../../src/webhooks/store/events.repository.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';
import { seedEndpoint } from '../helpers/webhook-seed.ts';

const DAY = 86_400_000;

interface DeleteStatement {
  table: string;
  rows: number;
}

/** Records each DELETE's table and the rows it removed (RETURNING rows, or the affected count). */
class DeleteRecorder implements KyselyPlugin {
  readonly deletes: DeleteStatement[] = [];
  readonly #tables = new Map<unknown, string>();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const { node } = args;
    if (DeleteQueryNode.is(node)) {
      const from = node.from.froms[0];
      this.#tables.set(args.queryId, from && TableNode.is(from) ? from.table.identifier.name : '?');
    }
    return node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const table = this.#tables.get(args.queryId);
    if (table !== undefined) {
      this.#tables.delete(args.queryId);
      const { numAffectedRows, rows } = args.result;
      this.deletes.push({ table, rows: numAffectedRows === undefined ? rows.length : Number(numAffectedRows) });
    }
    return args.result;
  }

  on(table: string): number[] {
    return this.deletes.filter((d) => d.table === table).map((d) => d.rows);
  }
}

const id = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

async function insertEndpoint(db: Db): Promise<string> {
  const endpointId = id('whep');
  await seedEndpoint(db, { id: endpointId, url: 'https://hooks.example.com/', secret: 'sealed' });
  return endpointId;
}

/** An event with one delivery per endpoint (state `state`), each with two attempts. */
async function insertEvent(
  db: Db,
  occurredAt: Date,
  endpoints: string[],
  state: 'pending' | 'succeeded' = 'succeeded',
): Promise<string> {
  const eventId = id('evt');
  const at = toDbTime(occurredAt);
  await db
    .insertInto('webhook_events')
    .values({
      id: eventId,
      type: 'order.created',
      occurred_at: at,
      data: '{}',
      owner: null,
      customer_id: null,
      order_id: null,
    })
    .execute();
  for (const endpointId of endpoints) {
    const deliveryId = id('dlv');
    await db
      .insertInto('webhook_deliveries')
      .values({
        id: deliveryId,
        event_id: eventId,
        endpoint_id: endpointId,
        state,
        attempt_count: 2,
        retry_index: 2,
        next_attempt_at: state === 'pending' ? toDbTime(new Date(Date.now() + DAY)) : at,
        lease_owner: null,
        lease_until: null,
        last_status_code: 200,
        last_error: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    for (const attempt of [1, 2])
      await db
        .insertInto('webhook_attempts')
        .values({
          delivery_id: deliveryId,
          attempt,
          started_at: at,
          duration_ms: 5,
          status_code: attempt === 2 ? 200 : 503,
          error_kind: null,
          error_detail: null,
          response_excerpt: null,
        })
        .execute();
  }
  return eventId;
}

async function count(db: Db, table: 'webhook_events' | 'webhook_deliveries' | 'webhook_attempts'): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

for (const dialect of testDialects()) {
  describe(`retention purges delete in bounded batches [${dialect}]`, () => {
    let handle: DatabaseHandle;

    useMigratedDatabase(dialect, (opened) => {
      handle = opened;
    });

    test('event purge: at most a batch of events or deliveries per DELETE; waiting and recent events stay', async () => {
      const db = handle.db;
      const endpoints = [await insertEndpoint(db), await insertEndpoint(db), await insertEndpoint(db)];
      const old = Date.now() - 40 * DAY;
      // 11 expired events (33 deliveries, 66 attempts), all at the same instant but two: the keyset must
      // page through ties; one expired event still waits for a retry; two recent ones.
      const expired: string[] = [];
      for (let i = 0; i < 11; i++) expired.push(await insertEvent(db, new Date(old + (i < 9 ? 0 : i)), endpoints));
      const waiting = await insertEvent(db, new Date(old), endpoints.slice(0, 1), 'pending');
      const recent = [await insertEvent(db, new Date(), endpoints), await insertEvent(db, new Date(), endpoints)];

      const recorder = new DeleteRecorder();
      const purged = await purgeEvents(db.withPlugin(recorder), new Date(Date.now() - 30 * DAY), {
        events: 3,
        deliveries: 4,
      });

      const state = () => JSON.stringify(recorder.deletes);
      assert.equal(purged, 11, `every settled expired event is purged; DELETEs: ${state()}`);
      const deliveryDeletes = recorder.on('webhook_deliveries');
      const eventDeletes = recorder.on('webhook_events');
      assert.ok(
        deliveryDeletes.every((n) => n <= 4),
        `at most 4 deliveries per DELETE: ${state()}`,
      );
      assert.ok(
        eventDeletes.every((n) => n <= 3),
        `at most 3 events per DELETE: ${state()}`,
      );
      assert.equal(
        deliveryDeletes.reduce((a, b) => a + b, 0),
        33,
        `the 33 deliveries of the purged events, in batches: ${state()}`,
      );
      const remaining = await db.selectFrom('webhook_events').select('id').orderBy('seq').execute();
      assert.deepEqual(
        remaining.map((r) => r.id),
        [waiting, ...recent],
        'the event a delivery waits for, and the recent ones, stay',
      );
      assert.equal(await count(db, 'webhook_deliveries'), 1 + 6, 'their deliveries stay');
      assert.equal(await count(db, 'webhook_attempts'), 2 * 7, 'the purged deliveries took their attempts along');
      assert.equal(await purgeEvents(db, new Date(Date.now() - 30 * DAY)), 0, 'nothing more to purge');
    });

    test('idempotency-key purge: at most a batch of keys per DELETE; live keys stay', async () => {
      const db = handle.db;
      const now = new Date();
      const key = (n: number, expiresAt: Date) => ({
        caller: 'client-a',
        key: `key-${n}`,
        fingerprint: 'f',
        state: 'done' as const,
        locked_until: toDbTime(now),
        response_status: 201,
        response_headers: '{}',
        response_body: '{}',
        created_at: toDbTime(now),
        expires_at: toDbTime(expiresAt),
      });
      // 25 expired keys, many expiring at the same instant (ties across batches), and 3 live ones.
      const rows = Array.from({ length: 25 }, (_, n) => key(n, new Date(now.getTime() - DAY + (n % 4) * 1000)));
      rows.push(...[25, 26, 27].map((n) => key(n, new Date(now.getTime() + DAY))));
      await db.insertInto('idempotency_keys').values(rows).execute();

      const recorder = new DeleteRecorder();
      const purged = await purgeExpiredKeys(db.withPlugin(recorder), now, 10);

      assert.equal(purged, 25);
      assert.deepEqual(recorder.on('idempotency_keys'), [10, 10, 5], 'three DELETEs of at most 10 keys');
      const left = await db.selectFrom('idempotency_keys').select('key').orderBy('key').execute();
      assert.deepEqual(
        left.map((r) => r.key),
        ['key-25', 'key-26', 'key-27'],
      );
    });

    test('audit purge: at most a batch of entries per DELETE, oldest first; recent entries stay', async () => {
      const db = handle.db;
      const old = Date.now() - 400 * DAY;
      for (let n = 0; n < 25; n++)
        await recordAudit(db, {
          actor: { type: 'user', id: 'u' },
          action: 'client.updated',
          outcome: 'success',
          details: { n },
          // Recorded out of time order (seq order is not time order), with ties.
          at: new Date(old + ((n * 7) % 25) * 1000 - (n % 3) * 1000),
        });
      for (let n = 25; n < 28; n++)
        await recordAudit(db, {
          actor: { type: 'user', id: 'u' },
          action: 'client.updated',
          outcome: 'success',
          details: { n },
          at: new Date(),
        });

      const recorder = new DeleteRecorder();
      const purged = await purgeAuditBefore(db.withPlugin(recorder), new Date(Date.now() - 365 * DAY), 10);

      assert.equal(purged, 25);
      assert.deepEqual(recorder.on('audit_log'), [10, 10, 5], 'three DELETEs of at most 10 entries');
      const left = await db.selectFrom('audit_log').select('details').execute();
      assert.equal(left.length, 3, `the recent entries stay: ${JSON.stringify(left)}`);
    });
  });
}
