// Token counts (src/auth-server/tokens/token-stats.ts): tokens are counted per hour and grant in memory and
// written to token_stats on a flush, summed across flushes, and flushed once more when the app closes,
// so no token issued before a shutdown is lost. The overview that reads them: test/admin/stats.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TokenCounter } from '../../src/auth-server/tokens/token-stats.ts';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { startAuthServer } from '../helpers/auth-server.ts';
import { createTestDatabase, testDialects } from '../helpers/databases.ts';
import { tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';
import { dropWithin } from '../helpers/server.ts';

const HOUR = 3_600_000;
/** A whole hour, three hours ago: every counted token falls in it. */
const BASE = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;

for (const dialect of testDialects()) {
  describe(`token counts are written when the app closes [${dialect}]`, () => {
    test('a token issued just before the shutdown is in token_stats afterwards', async () => {
      const server = await startAuthServer(dialect);
      try {
        const client = await server.createClient({ grantTypes: ['client_credentials'], redirectUris: [] });
        const result = await tokenRequest(
          server,
          { grant_type: 'client_credentials', scope: 'orders:read' },
          { basic: [client.clientId, client.clientSecret!] },
        );
        tokenFrom(result);
        await server.stop();
        const handle = openDatabase(server.databaseUrl);
        try {
          const rows = await handle.db.selectFrom('token_stats').select(['grant_type', 'count']).execute();
          assert.deepEqual(
            rows.map((r) => ({ grant: r.grant_type, count: Number(r.count) })),
            [{ grant: 'client_credentials', count: 1 }],
          );
        } finally {
          await handle.db.destroy();
        }
      } finally {
        await server.close();
      }
    });

    test('the counter writes nothing before its flush, sums across flushes, and writes the rest on close', async () => {
      const database = await createTestDatabase(dialect);
      const handle = openDatabase(database.url);
      try {
        await migrateToLatest(handle);
        const errors: unknown[] = [];
        const counter = new TokenCounter(handle.db, (err) => errors.push(err), 3_600_000);
        const read = async () =>
          (
            await handle.db
              .selectFrom('token_stats')
              .select(['hour', 'grant_type', 'count'])
              .orderBy('grant_type')
              .execute()
          ).map((r) => ({ hour: new Date(r.hour).toISOString(), grant: r.grant_type, count: Number(r.count) }));
        const hour = new Date(BASE);
        counter.record('client_credentials', new Date(BASE + 5));
        counter.record('password', new Date(BASE + 6)); // not a grant Signet issues: `other`
        assert.deepEqual(await read(), [], 'nothing is written on the token request');
        await counter.flush();
        counter.record('client_credentials', new Date(BASE + HOUR - 1));
        await counter.close();
        assert.deepEqual(await read(), [
          { hour: hour.toISOString(), grant: 'client_credentials', count: 2 },
          { hour: hour.toISOString(), grant: 'other', count: 1 },
        ]);
        assert.deepEqual(errors, []);
      } finally {
        await handle.db.destroy();
        await dropWithin(database);
      }
    });
  });
}
