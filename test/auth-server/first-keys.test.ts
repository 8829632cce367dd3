// Instances started together create one key set (docs/operations/scaling-out.md, "First start and upgrades"): three
// database handles, as three instances have, create the first keys at the same moment on one fresh database; one
// signing key per algorithm and one cookie key result, whichever dialect.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ensureKeys, signingAlgorithms } from '../../src/auth-server/tokens/keys.ts';
import { openDatabase } from '../../src/db/database.ts';
import { createMigratedTestDatabase } from '../helpers/database-template.ts';
import { testDialects } from '../helpers/databases.ts';

const KEK = Buffer.alloc(32, 3);

for (const dialect of testDialects()) {
  describe(`the first key set [${dialect}]`, () => {
    test('three instances starting together create it once', async () => {
      const database = await createMigratedTestDatabase(dialect);
      const handles = [0, 1, 2].map(() => openDatabase(database.url));
      try {
        const algorithms = signingAlgorithms('ES256');
        await Promise.all(handles.map((handle) => ensureKeys(handle.db, algorithms, KEK)));
        const keys = await handles[0]!.db.selectFrom('signing_keys').select(['use', 'alg']).execute();
        const counts = keys.map((k) => `${k.use} ${k.alg}`).sort();
        assert.deepEqual(counts, ['cookie HS256', 'jws ES256', 'jws RS256']);
      } finally {
        for (const handle of handles) await handle.db.destroy();
        await database.drop();
      }
    });
  });
}
