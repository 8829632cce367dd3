// The live check's cache (src/auth-server/identity/account-states.ts) with an injected clock: a change made
// behind this process's back (another instance, the CLI) is seen once the entry is older than the bound; a
// change through the users service is seen at once. Real SQLite and PostgreSQL, no waiting.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cliActor } from '../../src/audit/audit.ts';
import { createAccountStates } from '../../src/auth-server/identity/account-states.ts';
import { updateUserRow } from '../../src/auth-server/identity/users.repository.ts';
import { createUsersService } from '../../src/auth-server/identity/users.service.ts';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { ADMIN_SCOPE_ROLES } from '../../src/operator/admin.feature.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';

const by = { actor: cliActor() };
const TOKEN_SCOPES = new Set(['orders:read', 'admin:read', 'admin:write']);

for (const dialect of testDialects()) {
  describe(`account states for the live check [${dialect}]`, () => {
    let handle: DatabaseHandle;
    useMigratedDatabase(dialect, (h) => (handle = h));
    let clock = 1_000_000;
    let n = 0;

    function setup(ttlMs = 5000) {
      const states = createAccountStates({ db: handle.db, scopeRoles: ADMIN_SCOPE_ROLES, ttlMs, now: () => clock });
      const users = createUsersService({ db: handle.db, onChange: states.forget });
      const scopesOf = async (subject: string) => {
        const verdict = await states.check({ subject, scopes: TOKEN_SCOPES });
        return 'refused' in verdict ? verdict.refused : [...verdict.scopes].sort().join(' ');
      };
      const admin = () =>
        users.create(
          { email: `u${++n}-${dialect}@example.test`, name: 'U', password: 'long enough pw', roles: ['admin'] },
          by,
        );
      return { states, users, scopesOf, admin };
    }

    test('a change behind the cache is seen once the entry is older than the bound, not before', async () => {
      const { scopesOf, admin } = setup();
      const user = await admin();
      assert.equal(await scopesOf(user.id), 'admin:read admin:write orders:read');
      await updateUserRow(handle.db, user.id, { roles: [] }); // as another instance would
      clock += 4999;
      assert.equal(await scopesOf(user.id), 'admin:read admin:write orders:read', 'still within the bound');
      clock += 1;
      assert.equal(await scopesOf(user.id), 'orders:read', 'read again at the bound');
      await updateUserRow(handle.db, user.id, { disabledAt: new Date() });
      clock += 5000;
      assert.equal(await scopesOf(user.id), 'the user of this token is disabled');
    });

    test('a change through the users service is seen on the next check, whatever the clock', async () => {
      const { scopesOf, admin, users } = setup();
      const user = await admin();
      assert.equal(await scopesOf(user.id), 'admin:read admin:write orders:read');
      await users.setRoles(user.id, ['auditor'], by);
      assert.equal(await scopesOf(user.id), 'admin:read orders:read');
      await users.disable(user.id, by);
      assert.equal(await scopesOf(user.id), 'the user of this token is disabled');
      await users.enable(user.id, by);
      assert.equal(await scopesOf(user.id), 'admin:read orders:read');
      await users.remove(user.id, by);
      assert.equal(await scopesOf(user.id), 'the user of this token no longer exists');
    });

    test('a read that began before a change is not cached over it', async () => {
      const { states, scopesOf, admin, users } = setup();
      const user = await admin();
      const racing = states.check({ subject: user.id, scopes: TOKEN_SCOPES }); // reads the old row
      await users.setRoles(user.id, [], by);
      await racing;
      assert.equal(await scopesOf(user.id), 'orders:read');
    });

    test('a bound of 0 reads the user on every check', async () => {
      const { scopesOf, admin } = setup(0);
      const user = await admin();
      assert.equal(await scopesOf(user.id), 'admin:read admin:write orders:read');
      await updateUserRow(handle.db, user.id, { roles: ['auditor'] });
      assert.equal(await scopesOf(user.id), 'admin:read orders:read');
    });
  });
}
