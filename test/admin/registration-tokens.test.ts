// Registration tokens are locked down (docs/security.md, "Registration"; docs/guides/admin-api.md,
// Registration tokens): a token never allows an admin scope, so a self-registered client can never
// administer Signet; a token registers as many clients as its use count says (default 1), not after its
// expiry or revocation; tokens are listed and revoked through the admin API, never shown again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call, fetchWithin } from '../helpers/http.ts';
import { tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';

async function adminToken(server: AuthTestServer, scope = 'admin:read admin:write'): Promise<string> {
  const ops = await server.createClient({ scopes: scope.split(' '), grantTypes: ['client_credentials'] });
  const issued = await tokenRequest(server, {
    grant_type: 'client_credentials',
    scope,
    client_id: ops.clientId,
    client_secret: ops.clientSecret!,
  });
  return tokenFrom(issued, 'access_token', 'the admin client’s token');
}

interface Issued {
  id: string;
  registration_token: string;
  max_uses: number;
  use_count: number;
  status: string;
  scope: string;
}

async function issue(server: AuthTestServer, admin: string, body: Record<string, unknown>): Promise<Issued> {
  const res = await call(server.url, 'POST', '/api/admin/registration-tokens', { token: admin, body });
  expectStatus(res, 201, 'issue a registration token');
  assert.equal(res.headers.get('location'), `${server.url}/api/admin/registration-tokens/${res.json.id}`, res.text);
  return res.json as Issued;
}

async function register(server: AuthTestServer, token: string, metadata: Record<string, unknown>) {
  const response = await fetchWithin(`${server.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(metadata),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text || '{}') as Record<string, unknown> };
}

const MACHINE = { grant_types: ['client_credentials'], client_name: 'Self-registered machine' };

for (const dialect of testDialects()) {
  describe(`registration tokens [${dialect}]`, () => {
    let server: AuthTestServer;
    let admin: string;
    before(async () => {
      server = await startAuthServer(dialect, {
        DYNAMIC_REGISTRATION: 'true',
        // The widest policy, so the refusals below come from the admin-scope rule alone.
        REGISTRATION_GRANT_TYPES: 'authorization_code,refresh_token,client_credentials',
      });
      admin = await adminToken(server);
    });
    after(() => server.close());

    test('a registration token with an admin scope is refused: 422 problem+json pointing at the scope', async () => {
      for (const scope of ['orders:read admin:read', 'orders:read admin:write']) {
        const res = await call(server.url, 'POST', '/api/admin/registration-tokens', {
          token: admin,
          body: { scope, expires_in: 3600 },
        });
        const problem = expectProblem(res, 422, 'validation-error', scope);
        assert.deepEqual(
          (problem.errors as { pointer: string }[]).map((e) => e.pointer),
          ['/scope/1'],
          res.text,
        );
        assert.match(String(problem.detail), /never given to a self-registered client/, res.text);
      }
      const issued = await server.app.database.db
        .selectFrom('audit_log')
        .select('target_id')
        .where('action', '=', 'registration_token.issued')
        .execute();
      const rows = await server.app.database.db.selectFrom('registration_tokens').select('id').execute();
      assert.deepEqual(
        rows.filter((row) => !issued.some((entry) => entry.target_id === row.id)),
        [],
        'nothing stored for a refused token',
      );
    });

    test('a self-registered client never gets an admin scope, nor a token for one, nor /api/admin', async () => {
      const token = await issue(server, admin, { scope: 'orders:read', max_uses: 5 });
      const withAdmin = await register(server, token.registration_token, {
        ...MACHINE,
        scope: 'orders:read admin:read',
      });
      assert.equal(withAdmin.status, 400, withAdmin.text);
      assert.equal(withAdmin.json.error, 'invalid_client_metadata', withAdmin.text);
      assert.match(String(withAdmin.json.error_description), /admin:read is never given/, withAdmin.text);

      const created = await register(server, token.registration_token, { ...MACHINE, scope: 'orders:read' });
      assert.equal(created.status, 201, created.text);
      const credentials = {
        client_id: String(created.json.client_id),
        client_secret: String(created.json.client_secret),
      };
      const adminScope = await tokenRequest(server, {
        grant_type: 'client_credentials',
        scope: 'admin:read',
        ...credentials,
      });
      expectStatus(adminScope, 400, 'a client-credentials token for admin:read');
      assert.equal(adminScope.body.error, 'invalid_scope', adminScope.text);
      const own = tokenFrom(
        await tokenRequest(server, { grant_type: 'client_credentials', ...credentials }),
        'access_token',
        'the client’s own token',
      );
      for (const path of ['/api/admin/users', '/api/admin/clients', '/api/admin/registration-tokens']) {
        const res = await call(server.url, 'GET', path, { token: own });
        expectProblem(res, 403, 'insufficient-scope', path);
      }
      const listed = await call(server.url, 'GET', `/api/admin/registration-tokens/${token.id}`, { token: admin });
      expectStatus(listed, 200);
      assert.equal(listed.json.use_count, 1, 'the refused registration spent no use');
      const audit = await server.app.database.db
        .selectFrom('audit_log')
        .select('details')
        .where('action', '=', 'client.registered')
        .where('target_id', '=', credentials.client_id)
        .executeTakeFirstOrThrow();
      assert.equal(JSON.parse(audit.details).registration_token, token.id, 'the entry names the token used');
    });

    test('a one-use token registers one client; every other attempt, even concurrent, is 401 invalid_token', async () => {
      const token = await issue(server, admin, { scope: 'orders:read' });
      assert.equal(token.max_uses, 1, 'one use by default');
      const attempts = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          register(server, token.registration_token, { redirect_uris: [REDIRECT], client_name: `Race ${i}` }),
        ),
      );
      const statuses = attempts.map((a) => a.status).sort();
      assert.deepEqual(statuses, [201, 401, 401, 401, 401], attempts.map((a) => a.text).join('\n'));
      for (const refused of attempts.filter((a) => a.status === 401))
        assert.equal(refused.json.error, 'invalid_token', refused.text);
      const again = await register(server, token.registration_token, {
        redirect_uris: [REDIRECT],
        client_name: 'Late',
      });
      assert.equal(again.status, 401, again.text);
      assert.equal(again.json.error, 'invalid_token', again.text);
      const read = await call(server.url, 'GET', `/api/admin/registration-tokens/${token.id}`, { token: admin });
      assert.deepEqual([read.json.use_count, read.json.status], [1, 'used_up'], read.text);
    });

    test('a token with max_uses 3 registers three clients, then no more', async () => {
      const token = await issue(server, admin, { max_uses: 3, description: 'three apps' });
      for (let i = 0; i < 3; i += 1) {
        const res = await register(server, token.registration_token, {
          redirect_uris: [REDIRECT],
          client_name: `App ${i}`,
        });
        assert.equal(res.status, 201, res.text);
      }
      const fourth = await register(server, token.registration_token, { redirect_uris: [REDIRECT] });
      assert.equal(fourth.status, 401, fourth.text);
    });

    test('an expired token is refused', async () => {
      const token = await issue(server, admin, { expires_in: 60 });
      // Its expiry passed: the row says so, as it would a minute later.
      await server.app.database.db
        .updateTable('registration_tokens')
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', token.id)
        .execute();
      const res = await register(server, token.registration_token, { redirect_uris: [REDIRECT] });
      assert.equal(res.status, 401, res.text);
      assert.equal(res.json.error, 'invalid_token', res.text);
      const read = await call(server.url, 'GET', `/api/admin/registration-tokens/${token.id}`, { token: admin });
      assert.equal(read.json.status, 'expired', read.text);
    });

    test('tokens are listed newest first without their value, and revoked at once (admin API)', async () => {
      const first = await issue(server, admin, { scope: 'orders:read', description: 'for the shop team' });
      const second = await issue(server, admin, {});
      const page = await call(server.url, 'GET', '/api/admin/registration-tokens?limit=2', { token: admin });
      expectStatus(page, 200);
      assert.deepEqual(
        (page.json.Items as Issued[]).map((t) => t.id),
        [second.id, first.id],
        page.text,
      );
      assert.ok(!page.text.includes(first.registration_token), 'the list never shows a token');
      assert.ok(page.json._links.next, 'more tokens on the next page');
      const nextUrl = new URL(String(page.json._links.next.href));
      const next = await call(server.url, 'GET', `${nextUrl.pathname}${nextUrl.search}`, { token: admin });
      expectStatus(next, 200);
      assert.ok(
        !(next.json.Items as Issued[]).some((t) => t.id === first.id || t.id === second.id),
        `the next page holds older tokens only: ${next.text}`,
      );

      const reader = await adminToken(server, 'admin:read');
      const forbidden = await call(server.url, 'DELETE', `/api/admin/registration-tokens/${first.id}`, {
        token: reader,
      });
      expectProblem(forbidden, 403, 'insufficient-scope');
      const revoked = await call(server.url, 'DELETE', `/api/admin/registration-tokens/${first.id}`, { token: admin });
      expectStatus(revoked, 204);
      const refused = await register(server, first.registration_token, { redirect_uris: [REDIRECT] });
      assert.equal(refused.status, 401, refused.text);
      assert.equal(refused.json.error, 'invalid_token', refused.text);
      const read = await call(server.url, 'GET', `/api/admin/registration-tokens/${first.id}`, { token: admin });
      assert.equal(read.json.status, 'revoked', read.text);
      assert.ok(read.json.revoked_at, read.text);
      const twice = await call(server.url, 'DELETE', `/api/admin/registration-tokens/${first.id}`, { token: admin });
      expectStatus(twice, 204);
      const unknown = await call(server.url, 'DELETE', '/api/admin/registration-tokens/rt_000000000000000000000000', {
        token: admin,
      });
      expectProblem(unknown, 404, 'not-found');
      const entries = await server.app.database.db
        .selectFrom('audit_log')
        .select(['actor_type', 'target_id'])
        .where('action', '=', 'registration_token.revoked')
        .execute();
      assert.deepEqual(
        entries.map((e) => [e.actor_type, e.target_id]),
        [['client', first.id]],
        'revoked once, audited once',
      );
    });
  });
}
