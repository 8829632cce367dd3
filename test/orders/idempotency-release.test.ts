// Releasing the Idempotency-Key of a failed request (src/idempotency/idempotency-release.ts): a release
// that fails as an outage is sent again, on another pooled connection, within a short budget; one that
// never gets through leaves a 503 whose Retry-After is the time until the claim's lock ends. The outage
// is injected into the release statements only (a Kysely plugin failing them as node-postgres does for
// a connection lost under it), so that the first attempts fail for certain while the database is fine;
// test/orders/idempotency-connection-loss.test.ts loses real connections. Every dialect.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { KyselyPlugin, PluginTransformQueryArgs, RootOperationNode } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { fromDbTime } from '../../src/db/codecs.ts';
import { Problem } from '../../src/http/problems/problems.ts';
import { claim, type IdempotencySettings, type Ownership } from '../../src/idempotency/idempotency-keys.ts';
import { releaseAfterFailure, releaseWithRetries } from '../../src/idempotency/idempotency-release.ts';
import { createMigratedTestDatabase } from '../helpers/database-template.ts';
import { testDialects, type TestDatabase } from '../helpers/databases.ts';

const SETTINGS: IdempotencySettings = { ttlSeconds: 3600, lockSeconds: 30, singleWriter: false };

/** Fails the first `failures` DELETE statements as a connection lost mid-query; counts every DELETE. */
function losingDeletes(failures: number): KyselyPlugin & { deletes: number } {
  const plugin = {
    deletes: 0,
    transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
      if (node.kind === 'DeleteQueryNode' && ++plugin.deletes <= failures)
        throw new Error('Connection terminated unexpectedly');
      return node;
    },
    transformResult: async <T>({ result }: { result: T }): Promise<T> => result,
  };
  return plugin;
}

for (const dialect of testDialects())
  describe(`releasing a failed request's Idempotency-Key [${dialect}]`, () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;
    let n = 0;
    before(async () => {
      database = await createMigratedTestDatabase(dialect);
      handle = openDatabase(database.url);
    });
    after(async () => {
      await handle.db.destroy();
      await database.drop();
    });

    async function claimed(): Promise<Ownership> {
      const id = { caller: 'client:release-test', key: `k${++n}`, fingerprint: 'f' };
      const result = await claim(handle.db, SETTINGS, id);
      assert.ok('lockedUntil' in result, JSON.stringify(result));
      return { caller: id.caller, key: id.key, lockedUntil: result.lockedUntil };
    }

    async function keyRow(ours: Ownership) {
      return handle.db
        .selectFrom('idempotency_keys')
        .select(['state', 'locked_until'])
        .where('caller', '=', ours.caller)
        .where('key', '=', ours.key)
        .executeTakeFirst();
    }

    test('a release lost twice with its connection is sent again and gets through', async () => {
      const ours = await claimed();
      const plugin = losingDeletes(2);
      const released = await releaseWithRetries(handle.db.withPlugin(plugin), ours);
      assert.equal(released, true, `released after ${plugin.deletes} attempts`);
      assert.equal(plugin.deletes, 3, 'two lost, the third taken');
      assert.equal(await keyRow(ours), undefined, 'the key is free for the retry');
    });

    test('the failed request is then answered with its own error', async () => {
      const ours = await claimed();
      const outage = new Error('Connection terminated unexpectedly');
      const answer = await releaseAfterFailure(handle.db.withPlugin(losingDeletes(1)), ours, outage);
      assert.equal(answer, outage);
      assert.equal(await keyRow(ours), undefined);
    });

    test('a release that never gets through: a 503 whose Retry-After is the time until the claim ends', async () => {
      const ours = await claimed();
      const plugin = losingDeletes(Number.POSITIVE_INFINITY);
      const outage = new Error('Connection terminated unexpectedly');
      const answer = await releaseAfterFailure(handle.db.withPlugin(plugin), ours, outage);
      const answeredAt = Date.now();
      assert.ok(answer instanceof Problem, `a problem, got ${String(answer)}`);
      assert.equal(answer.status, 503);
      const retryAfter = Number(answer.options.headers?.['retry-after']);
      const row = await keyRow(ours);
      assert.equal(row?.state, 'in_flight', 'the claim is still there');
      const lockedUntil = fromDbTime(row.locked_until).getTime();
      assert.ok(
        answeredAt + retryAfter * 1000 >= lockedUntil && retryAfter <= SETTINGS.lockSeconds,
        `Retry-After ${retryAfter} s from ${new Date(answeredAt).toISOString()} must reach the lock's end ${new Date(lockedUntil).toISOString()}`,
      );
      assert.ok(plugin.deletes > 1 && plugin.deletes <= 5, `bounded attempts: ${plugin.deletes}`);
    });

    test('a failure that is no outage keeps its answer even when the key could not be released', async () => {
      const ours = await claimed();
      const conflict = new Problem('preconditionFailed', 'the order changed');
      const answer = await releaseAfterFailure(
        handle.db.withPlugin(losingDeletes(Number.POSITIVE_INFINITY)),
        ours,
        conflict,
      );
      assert.equal(answer, conflict);
    });
  });
