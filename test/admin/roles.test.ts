// Roles (docs/security.md, "Roles"): admin:read and admin:write reach a user's token only when the user holds the
// `admin` role and the client was registered for them; a client registered for them gets them with
// client credentials (automation). A token without them is refused by the admin API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cliActor } from '../../src/audit/audit.ts';
import { updateUserRow } from '../../src/auth-server/identity/users.repository.ts';
import { createUsersService } from '../../src/auth-server/identity/users.service.ts';
import { createClientsService } from '../../src/auth-server/clients/clients.service.ts';
import { API_SCOPES } from '../../src/app.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { call } from '../helpers/http.ts';
import {
  authorizeWithLogin,
  exchangeCode,
  jwtParts,
  refresh,
  tokenFrom,
  tokenRequest,
} from '../helpers/oauth-requests.ts';

const REQUESTED = 'openid orders:read admin:read admin:write';
const by = { actor: cliActor() };

function scopesOf(token: string): string[] {
  return String(jwtParts(token).payload.scope ?? '').split(' ');
}

for (const dialect of testDialects()) {
  describe(`admin scopes follow the admin role [${dialect}]`, () => {
    let server: AuthTestServer;
    let client: { clientId: string; clientSecret: string | undefined; redirectUri: string };
    let users: ReturnType<typeof createUsersService>;
    const password = 'a long enough password';

    before(async () => {
      server = await startAuthServer(dialect);
      users = createUsersService({ db: server.app.database.db });
      client = await server.createClient({ scopes: ['openid', 'orders:read', 'admin:read', 'admin:write'] });
    });
    after(() => server.close());

    async function signIn(email: string): Promise<{ access: string; refreshToken: string }> {
      const flow = await authorizeWithLogin(server, client, { email, password }, { scope: REQUESTED });
      const tokens = await exchangeCode(server, client, flow);
      return { access: tokenFrom(tokens), refreshToken: tokenFrom(tokens, 'refresh_token') };
    }

    test('a user without the role gets a token without admin scopes, refused by the admin API (403)', async () => {
      const user = await users.create({ email: `plain-${dialect}@example.test`, name: 'Plain', password }, by);
      const { access } = await signIn(user.email);
      const scopes = scopesOf(access);
      assert.ok(scopes.includes('orders:read'), `the other scopes are granted: ${scopes.join(' ')}`);
      assert.ok(
        !scopes.includes('admin:read') && !scopes.includes('admin:write'),
        `no admin scope: ${scopes.join(' ')}`,
      );
      const refused = await call(server.url, 'GET', '/api/admin/users', { token: access });
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.headers.get('content-type') ?? '', /problem\+json/);
    });

    test('a user holding the admin role gets admin:read and admin:write and reaches the admin API', async () => {
      const user = await users.create(
        { email: `admin-${dialect}@example.test`, name: 'Admin', password, roles: ['admin'] },
        by,
      );
      const { access } = await signIn(user.email);
      const scopes = scopesOf(access);
      assert.ok(scopes.includes('admin:read') && scopes.includes('admin:write'), scopes.join(' '));
      const listed = await call(server.url, 'GET', '/api/admin/users', { token: access });
      assert.equal(listed.status, 200, listed.text);
    });

    test('a refresh cannot keep admin scopes once the role is gone, even from a grant consented before', async () => {
      const user = await users.create(
        { email: `demoted-${dialect}@example.test`, name: 'Demoted', password, roles: ['admin'] },
        by,
      );
      const { refreshToken } = await signIn(user.email);
      // The role removed behind the service's back (its grants stay): the token endpoint still drops the scopes.
      await updateUserRow(server.app.database.db, user.id, { roles: [] });
      const refreshed = await refresh(server, client, refreshToken);
      const scopes = scopesOf(tokenFrom(refreshed, 'access_token', 'refresh after the role was removed'));
      assert.ok(!scopes.includes('admin:read') && !scopes.includes('admin:write'), scopes.join(' '));
      assert.ok(scopes.includes('orders:read'), scopes.join(' '));
    });

    test('a scope taken away from the client never reaches a new token, even by a refresh token issued before', async () => {
      const own = await server.createClient({ scopes: ['openid', 'orders:read', 'orders:write'] });
      const user = await users.create({ email: `narrowed-${dialect}@example.test`, name: 'Narrowed', password }, by);
      const flow = await authorizeWithLogin(
        server,
        own,
        { email: user.email, password },
        { scope: 'openid orders:read orders:write' },
      );
      const tokens = await exchangeCode(server, own, flow);
      assert.ok(scopesOf(tokenFrom(tokens)).includes('orders:write'), 'granted before');
      await createClientsService({ db: server.app.database.db, apiScopes: Object.keys(API_SCOPES) }).update(
        own.clientId,
        { scopes: ['openid', 'orders:read'] },
        by,
      );
      const refreshed = await refresh(server, own, tokenFrom(tokens, 'refresh_token'));
      const scopes = scopesOf(tokenFrom(refreshed, 'access_token', 'refresh after the scope was taken away'));
      assert.ok(!scopes.includes('orders:write'), scopes.join(' '));
      assert.ok(scopes.includes('orders:read'), scopes.join(' '));
    });

    test('a password set by an admin ends the sessions and refresh tokens of whoever signed in before', async () => {
      const user = await users.create({ email: `reset-${dialect}@example.test`, name: 'Reset', password }, by);
      const { refreshToken } = await signIn(user.email);
      await users.setPassword(user.id, 'another long enough password', by);
      const refused = await refresh(server, client, refreshToken);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error, 'invalid_grant', refused.text);
    });

    test('set-role revokes the grants: the refresh token dies, and the next sign-in follows the new roles', async () => {
      const user = await users.create({ email: `promoted-${dialect}@example.test`, name: 'Promoted', password }, by);
      const first = await signIn(user.email);
      assert.ok(!scopesOf(first.access).includes('admin:read'));
      await users.setRoles(user.id, ['admin'], by);
      const refused = await refresh(server, client, first.refreshToken);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error, 'invalid_grant', refused.text);
      const second = await signIn(user.email);
      assert.ok(scopesOf(second.access).includes('admin:write'), scopesOf(second.access).join(' '));
      const roleChanges = await server.app.database.db
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', 'user.role_changed')
        .where('target_id', '=', user.id)
        .execute();
      assert.equal(roleChanges.length, 1, JSON.stringify(roleChanges));
    });

    test('a confidential client registered for the admin scopes gets them with client credentials', async () => {
      const result = await tokenRequest(server, {
        grant_type: 'client_credentials',
        scope: 'admin:read admin:write',
        client_id: client.clientId,
        client_secret: client.clientSecret!,
      });
      const scopes = scopesOf(tokenFrom(result, 'access_token', 'client credentials'));
      assert.ok(scopes.includes('admin:read') && scopes.includes('admin:write'), scopes.join(' '));
    });

    test('a client not registered for them cannot get them, whatever the user', async () => {
      const other = await server.createClient({ scopes: ['openid', 'orders:read'] });
      const result = await tokenRequest(server, {
        grant_type: 'client_credentials',
        scope: 'admin:read',
        client_id: other.clientId,
        client_secret: other.clientSecret!,
      });
      assert.equal(result.status, 400, result.text);
      assert.equal(result.body.error, 'invalid_scope', result.text);
    });
  });
}
