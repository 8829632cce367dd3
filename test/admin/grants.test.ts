// Grants and sessions through the admin API (docs/guides/admin-api.md, Grants and sessions): a user signs
// in, an admin lists the grant and the session, revokes the grant (the refresh token fails with
// invalid_grant at once, introspection says inactive) and ends a session; each change leaves an audit
// entry naming the admin. Real HTTP against the built-in authorization server, on every dialect.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, fetchWithin, type CallResult } from '../helpers/http.ts';
import { authorizeWithLogin, exchangeCode, refresh, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

type Client = { clientId: string; clientSecret: string | undefined; redirectUri: string };

function expect(result: CallResult, status: number, what: string): CallResult {
  assert.equal(result.status, status, `${what}: ${result.status} ${result.text}`);
  return result;
}

for (const dialect of testDialects()) {
  describe(`admin API: grants and sessions [${dialect}]`, () => {
    let server: AuthTestServer;
    let app: Client;
    let ops: Client;
    let admin: string;

    before(async () => {
      server = await startAuthServer(dialect);
      app = await server.createClient({ scopes: ['openid', 'orders:read'] });
      ops = await server.createClient({ scopes: ['admin:read', 'admin:write'], grantTypes: ['client_credentials'] });
      const issued = await tokenRequest(server, {
        grant_type: 'client_credentials',
        scope: 'admin:read admin:write',
        client_id: ops.clientId,
        client_secret: ops.clientSecret!,
      });
      admin = tokenFrom(issued, 'access_token', 'the admin client’s token');
    });
    after(() => server.close());

    async function signIn(user: { email: string; password: string }) {
      const flow = await authorizeWithLogin(server, app, user, { scope: 'openid orders:read' });
      const tokens = await exchangeCode(server, app, flow);
      return { access: tokenFrom(tokens), refreshToken: tokenFrom(tokens, 'refresh_token') };
    }

    /** RFC 7662 with client_secret_basic, at the endpoint the discovery document names. */
    async function introspect(token: string): Promise<unknown> {
      const discovery = await fetchWithin(`${server.issuer}/.well-known/openid-configuration`);
      const endpoint = ((await discovery.json()) as { introspection_endpoint: string }).introspection_endpoint;
      const basic = Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64');
      const response = await fetchWithin(endpoint, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      return JSON.parse(text) as unknown;
    }

    async function audit(action: string, target: string) {
      const query = new URLSearchParams({ action, target });
      return expect(await call(server.url, 'GET', `/api/admin/audit?${query}`, { token: admin }), 200, 'audit').json
        .Items as { Actor: { Type: string; Id: string }; Target: { Id: string } }[];
    }

    test('the grant is listed per user and per client, without any token value', async () => {
      const user = await server.createUser();
      const { access, refreshToken } = await signIn(user);
      const byUser = expect(
        await call(server.url, 'GET', `/api/admin/users/${user.id}/grants`, { token: admin }),
        200,
        'grants of the user',
      );
      assert.equal(byUser.json.Items.length, 1, byUser.text);
      const grant = byUser.json.Items[0];
      assert.equal(grant.ClientId, app.clientId, byUser.text);
      assert.equal(grant.Account, user.id, byUser.text);
      assert.ok(grant.Scopes.includes('orders:read') && grant.Scopes.includes('openid'), byUser.text);
      assert.ok(grant.CreatedAtUtc && grant.ExpiresAtUtc, byUser.text);
      const byClient = expect(
        await call(server.url, 'GET', `/api/admin/clients/${app.clientId}/grants?limit=100`, { token: admin }),
        200,
        'grants of the client',
      );
      assert.ok(
        byClient.json.Items.some((g: { Id: string }) => g.Id === grant.Id),
        byClient.text,
      );
      for (const listed of [byUser.text, byClient.text]) {
        assert.ok(!listed.includes(refreshToken), 'no refresh token in the list');
        assert.ok(!listed.includes(access), 'no access token in the list');
      }
    });

    test('revoking the grant kills the refresh token at once and is audited with the admin as actor', async () => {
      const user = await server.createUser();
      const { access, refreshToken } = await signIn(user);
      const listed = await call(server.url, 'GET', `/api/admin/users/${user.id}/grants`, { token: admin });
      const grantId = listed.json.Items[0].Id as string;
      assert.equal(((await introspect(access)) as { active: boolean }).active, true, 'introspection before');
      expect(await call(server.url, 'DELETE', `/api/admin/grants/${grantId}`, { token: admin }), 204, 'revoke');

      const refused = await refresh(server, app, refreshToken);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error, 'invalid_grant', refused.text);
      assert.deepEqual(await introspect(access), { active: false }, 'introspection after the revocation');
      const after = await call(server.url, 'GET', `/api/admin/users/${user.id}/grants`, { token: admin });
      assert.deepEqual(after.json.Items, [], after.text);
      const entries = await audit('grant.revoked', grantId);
      assert.equal(entries.length, 1, JSON.stringify(entries));
      assert.deepEqual(entries[0]!.Actor, { Type: 'client', Id: ops.clientId });
      expect(await call(server.url, 'DELETE', `/api/admin/grants/${grantId}`, { token: admin }), 404, 'again');
    });

    test('the session is listed, and ending it is audited; the grant stays, as after a logout', async () => {
      const user = await server.createUser();
      await signIn(user);
      const sessions = expect(
        await call(server.url, 'GET', `/api/admin/users/${user.id}/sessions`, { token: admin }),
        200,
        'sessions',
      );
      assert.equal(sessions.json.Items.length, 1, sessions.text);
      const session = sessions.json.Items[0];
      assert.deepEqual(session.ClientIds, [app.clientId], sessions.text);
      assert.equal(session.Account, user.id, sessions.text);
      expect(await call(server.url, 'DELETE', `/api/admin/sessions/${session.Id}`, { token: admin }), 204, 'end');
      const left = await call(server.url, 'GET', `/api/admin/users/${user.id}/sessions`, { token: admin });
      assert.deepEqual(left.json.Items, [], left.text);
      // Refresh tokens outlive the browser session (docs/guides/signing-in-users.md, "Refresh"): revoking the grant
      // ends them.
      const grants = await call(server.url, 'GET', `/api/admin/users/${user.id}/grants`, { token: admin });
      assert.equal(grants.json.Items.length, 1, grants.text);
      const entries = await audit('session.ended', session.Id);
      assert.equal(entries.length, 1, JSON.stringify(entries));
      assert.deepEqual(entries[0]!.Actor, { Type: 'client', Id: ops.clientId });
    });

    test('a token without the admin scopes is refused (403)', async () => {
      const user = await server.createUser();
      const { access } = await signIn(user);
      for (const [method, path] of [
        ['GET', `/api/admin/users/${user.id}/grants`],
        ['GET', `/api/admin/users/${user.id}/sessions`],
        ['GET', `/api/admin/clients/${app.clientId}/grants`],
        ['DELETE', '/api/admin/grants/whatever'],
        ['DELETE', '/api/admin/sessions/whatever'],
      ] as const)
        expect(await call(server.url, method, path, { token: access }), 403, `${method} ${path}`);
    });
  });
}
