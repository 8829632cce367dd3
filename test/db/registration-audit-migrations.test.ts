// Migrations 0016 to 0018 on data written before them: a self-registered client loses the admin scopes an
// old registration token could give it, old initial access tokens are gone, and the audit entries already
// written are chained so `verify` finds the trail intact (and still finds a later change), and the audit stream
// starts after them (they were written before anyone could register an endpoint for them).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { registrationTokensMigration } from '../../src/db/migrations/0016-registration-tokens.ts';
import { auditChainMigration } from '../../src/db/migrations/0017-audit-chain.ts';
import { auditStreamMigration } from '../../src/db/migrations/0018-audit-stream.ts';
import { clusterSettingsMigration } from '../../src/db/migrations/0020-cluster-settings.ts';
import { signingKeyActivationMigration } from '../../src/db/migrations/0019-signing-key-activation.ts';
import { verifyAuditChain } from '../../src/audit/audit-chain.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';

/** Back to the schema before 0016: their `down` (and those of the later ones), and the migrator forgets them. */
async function before0016(handle: DatabaseHandle): Promise<void> {
  await clusterSettingsMigration(handle.dialect).down!(handle.db);
  await signingKeyActivationMigration(handle.dialect).down!(handle.db);
  await auditStreamMigration().down!(handle.db);
  await auditChainMigration().down!(handle.db);
  await registrationTokensMigration(handle.dialect).down!(handle.db);
  await sql`delete from kysely_migration where name in ('0016-registration-tokens', '0017-audit-chain', '0018-audit-stream', '0019-signing-key-activation', '0020-cluster-settings')`.execute(
    handle.db,
  );
}

const at = (minute: number) => `2026-01-01T00:${String(minute).padStart(2, '0')}:00.000Z`;

for (const dialect of testDialects()) {
  describe(`migrations 0016 to 0018 on existing data [${dialect}]`, () => {
    let handle: DatabaseHandle;
    useMigratedDatabase(dialect, (h) => {
      handle = h;
    });

    test('self-registered clients lose admin scopes; old entries are chained', async () => {
      await before0016(handle);
      // The tables as they were before 0016 (no hash columns yet): untyped, like the migrations see them.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const db = handle.db as unknown as Kysely<any>;
      const client = (id: string, scopes: string) => ({
        id,
        name: id,
        type: 'confidential',
        secret_hash: 'x',
        grant_types: JSON.stringify(['client_credentials']),
        redirect_uris: '[]',
        post_logout_redirect_uris: '[]',
        scopes,
        cors_origins: '[]',
        first_party: 0,
        created_at: at(0),
      });
      await db
        .insertInto('oauth_clients')
        .values([
          client('cl_registered', 'orders:read admin:read admin:write'),
          client('cl_managed', 'admin:read orders:write'),
          client('cl_by_admin', 'orders:read admin:read'),
        ])
        .execute();
      const entry = (id: string, minute: number, action: string, target: string | null) => ({
        id,
        occurred_at: at(minute),
        actor_type: 'client',
        actor_id: 'cl_registered',
        action,
        target_type: 'client',
        target_id: target,
        outcome: 'success',
        request_id: null,
        source_address: null,
        details: '{}',
      });
      await db
        .insertInto('audit_log')
        .values([
          entry('aud_1', 1, 'registration_token.issued', null),
          entry('aud_2', 2, 'client.registered', 'cl_registered'),
          entry('aud_3', 3, 'client.created', 'cl_by_admin'),
        ])
        .execute();
      await db
        .insertInto('oidc_payloads')
        .values([
          { model: 'InitialAccessToken', id: 'iat-hash', payload: '{}' },
          { model: 'RegistrationAccessToken', id: 'rat-hash', payload: '{}', client_id: 'cl_managed' },
        ])
        .execute();

      await migrateToLatest(handle);

      const scopes = Object.fromEntries(
        (await db.selectFrom('oauth_clients').select(['id', 'scopes']).orderBy('id').execute()).map((r) => [
          r.id,
          r.scopes,
        ]),
      );
      assert.equal(scopes.cl_registered, 'orders:read');
      assert.equal(scopes.cl_managed, 'orders:write');
      assert.equal(scopes.cl_by_admin, 'orders:read admin:read', 'a client an admin created keeps its scopes');
      const tokens = await db.selectFrom('oidc_payloads').select('model').execute();
      assert.deepEqual(
        tokens.map((t) => t.model),
        ['RegistrationAccessToken'],
        'the old initial access tokens are gone',
      );

      const verdict = await verifyAuditChain(handle.db);
      assert.deepEqual([verdict.intact, verdict.checked, verdict.firstId, verdict.lastId], [true, 3, 'aud_1', 'aud_3']);
      await db.updateTable('audit_log').set({ actor_id: 'someone else' }).where('id', '=', 'aud_2').execute();
      assert.deepEqual((await verifyAuditChain(handle.db)).broken, { id: 'aud_2', seq: 2, reason: 'altered' });
      const stream = await db.selectFrom('audit_stream').selectAll().execute();
      assert.deepEqual(
        stream.map((r) => [r.name, Number(r.last_seq)]),
        [['webhooks', 3]],
      );
    });
  });
}
