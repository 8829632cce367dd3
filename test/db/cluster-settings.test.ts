// The settings every instance must share (docs/operations/scaling-out.md, "Settings"): the first start records
// them; a start with another issuer, API audience or key-encryption key refuses, naming each variable and never a
// key; values derived from HOST and PORT follow a development server that moved; `signet migrate --adopt-settings`
// makes a deliberate change the cluster's. And a real `signet serve` with another PUBLIC_URL exits 1 saying why.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { adoptClusterSettings, checkClusterSettings } from '../../src/db/cluster-settings.ts';
import type { DatabaseHandle } from '../../src/db/database.ts';
import type { TestDatabase } from '../helpers/databases.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';
import { TEST_WEBHOOK_SECRET_KEY } from '../helpers/databases.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const KEK_A = Buffer.alloc(32, 1).toString('base64url');
const KEK_B = Buffer.alloc(32, 2).toString('base64url');

for (const dialect of testDialects()) {
  describe(`cluster settings [${dialect}]`, () => {
    let handle: DatabaseHandle;
    let database: TestDatabase;
    useMigratedDatabase(dialect, (h, d) => {
      handle = h;
      database = d;
    });
    const config = (env: Record<string, string>) => loadConfig({ DATABASE_URL: database.url, ...env });

    test('derived values follow a development server that moved, until a value is set on purpose', async () => {
      await checkClusterSettings(handle.db, config({ PORT: '3000' }));
      await checkClusterSettings(handle.db, config({ PORT: '4000' }));
      const recorded = await handle.db.selectFrom('cluster_settings').select(['name', 'value']).execute();
      assert.equal(recorded.find((r) => r.name === 'AUTH_ISSUER')?.value, 'http://127.0.0.1:4000/oauth');
      // A value set on purpose is compared even with a derived one: a first start without PUBLIC_URL in a cluster
      // that has one is refused.
      await adoptClusterSettings(
        handle.db,
        config({ PUBLIC_URL: 'https://api.example.com', KEY_ENCRYPTION_KEY: KEK_A }),
      );
      await assert.rejects(
        checkClusterSettings(handle.db, config({ PORT: '3000', KEY_ENCRYPTION_KEY: KEK_A })),
        /AUTH_ISSUER is "http:\/\/127\.0\.0\.1:3000\/oauth" here, but "https:\/\/api\.example\.com\/oauth" in the cluster/,
      );
    });

    test('an instance with another issuer, audience or key-encryption key is refused; the same one starts', async () => {
      const cluster = { PUBLIC_URL: 'https://api.example.com', KEY_ENCRYPTION_KEY: KEK_A };
      await adoptClusterSettings(handle.db, config(cluster));
      await checkClusterSettings(handle.db, config({ ...cluster, PORT: '3001' }));
      const refusal = await checkClusterSettings(
        handle.db,
        config({ PUBLIC_URL: 'https://other.example.com', KEY_ENCRYPTION_KEY: KEK_B }),
      ).then(
        () => assert.fail('started with another issuer and key'),
        (err: Error) => err,
      );
      assert.equal(refusal.name, 'ConfigError');
      for (const name of ['AUTH_ISSUER', 'API_RESOURCE', 'KEY_ENCRYPTION_KEY', 'signet migrate --adopt-settings'])
        assert.ok(refusal.message.includes(name), `${name} in: ${refusal.message}`);
      for (const key of [KEK_A, KEK_B]) assert.ok(!refusal.message.includes(key), refusal.message);
      assert.match(
        refusal.message,
        /KEY_ENCRYPTION_KEY is fingerprint [0-9a-f]{16} here, but fingerprint [0-9a-f]{16}/,
      );
      // Adopted on purpose, the new values are the cluster's; the old ones are refused from then on.
      const changed = await adoptClusterSettings(
        handle.db,
        config({ PUBLIC_URL: 'https://other.example.com', KEY_ENCRYPTION_KEY: KEK_B }),
      );
      assert.deepEqual(changed.sort(), ['API_RESOURCE', 'AUTH_ISSUER', 'KEY_ENCRYPTION_KEY']);
      await checkClusterSettings(
        handle.db,
        config({ PUBLIC_URL: 'https://other.example.com', KEY_ENCRYPTION_KEY: KEK_B }),
      );
      await assert.rejects(checkClusterSettings(handle.db, config(cluster)), /AUTH_ISSUER/);
    });

    test('signet serve with another PUBLIC_URL than the cluster exits 1 and says which; migrate --adopt-settings adopts it', async () => {
      const env = {
        ...process.env,
        DATABASE_URL: database.url,
        PUBLIC_URL: 'https://third.example.com',
        KEY_ENCRYPTION_KEY: KEK_B,
        WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
        METRICS_PORT: 'off',
        PORT: '0',
      };
      const run = (args: string[]) =>
        spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 60_000 });
      const started = run(['serve']);
      assert.equal(started.status, 1, `${started.stdout}${started.stderr}`);
      assert.match(started.stderr, /AUTH_ISSUER is "https:\/\/third\.example\.com\/oauth" here/, started.stderr);
      // Adopted with `signet migrate --adopt-settings`, the same configuration passes the check.
      const adopted = run(['migrate', '--adopt-settings']);
      assert.equal(adopted.status, 0, `${adopted.stdout}${adopted.stderr}`);
      assert.match(adopted.stdout, /cluster settings adopted: AUTH_ISSUER, API_RESOURCE/, adopted.stdout);
      assert.equal(run(['migrate', '--adopt']).status, 2, 'an unknown argument is a usage error');
      await checkClusterSettings(
        handle.db,
        config({ PUBLIC_URL: 'https://third.example.com', KEY_ENCRYPTION_KEY: KEK_B }),
      );
    });
  });
}
