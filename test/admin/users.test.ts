// /api/admin/users (docs/guides/admin-api.md, Users) through real HTTP: every route, the scopes, the audit
// entries, ETags, cursor pages, and what disabling does at once (refresh tokens die, sign-in is refused).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallOptions, type CallResult } from '../helpers/http.ts';
import { FlowError } from '../helpers/oauth-flow.ts';
import { authorizeWithLogin, exchangeCode, refresh, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

const PASSWORD = 'first secret password';
const NEW_PASSWORD = 'second secret password';

for (const dialect of testDialects()) {
  describe(`admin users API [${dialect}]`, () => {
    let server: AuthTestServer;
    let client: { clientId: string; clientSecret: string | undefined; redirectUri: string };
    let writer: string;
    let reader: string;

    async function clientToken(scopes: string[]): Promise<{ token: string; clientId: string }> {
      const registered = await server.createClient({ scopes });
      const result = await tokenRequest(server, {
        grant_type: 'client_credentials',
        scope: scopes.join(' '),
        client_id: registered.clientId,
        client_secret: registered.clientSecret!,
      });
      return { token: tokenFrom(result), clientId: registered.clientId };
    }

    const admin = (method: string, path: string, options: CallOptions = {}): Promise<CallResult> =>
      call(server.url, method, path, { token: writer, ...options });

    async function auditOf(userId: string): Promise<{ action: string; actor_id: string; details: string }[]> {
      return server.app.database.db
        .selectFrom('audit_log')
        .select(['action', 'actor_id', 'details', 'actor_type'])
        .where('target_id', '=', userId)
        .where('action', 'like', 'user.%') // the user's changes; sign-ins are recorded too
        .orderBy('seq')
        .execute();
    }

    async function createUser(email: string, roles: string[] = []): Promise<CallResult> {
      const created = await admin('POST', '/api/admin/users', {
        body: { Email: email, Name: 'Ada Admin', Password: PASSWORD, Roles: roles },
      });
      assert.equal(created.status, 201, created.text);
      return created;
    }

    before(async () => {
      server = await startAuthServer(dialect);
      client = await server.createClient({ scopes: ['openid', 'orders:read'] });
      writer = (await clientToken(['admin:read', 'admin:write'])).token;
      reader = (await clientToken(['admin:read'])).token;
    });
    after(() => server.close());

    test('POST creates a user: 201, Location, ETag, no password or hash, a user.created audit entry', async () => {
      const created = await createUser(`Create-${dialect}@Example.test`, ['admin']);
      const user = created.json;
      assert.equal(user.Email, `create-${dialect}@example.test`);
      assert.deepEqual(user.Roles, ['admin']);
      assert.equal(user.Disabled, false);
      assert.equal(created.headers.get('location'), `${server.url}/api/admin/users/${user.Id}`);
      assert.match(created.headers.get('etag') ?? '', /^"u-/);
      assert.ok(!created.text.includes(PASSWORD) && !/hash|password/i.test(created.text), created.text);
      const audit = await auditOf(user.Id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['user.created'],
      );
      assert.ok(!audit[0]!.details.includes(PASSWORD));
      const duplicate = await admin('POST', '/api/admin/users', {
        body: { Email: `create-${dialect}@example.test`, Name: 'Again', Password: PASSWORD },
      });
      assert.equal(duplicate.status, 409, duplicate.text);
      assert.match(duplicate.json.type, /email-taken/);
      const unknownRole = await admin('POST', '/api/admin/users', {
        body: { Email: `role-${dialect}@example.test`, Name: 'R', Password: PASSWORD, Roles: ['root'] },
      });
      assert.equal(unknownRole.status, 422, unknownRole.text);
      const short = await admin('POST', '/api/admin/users', {
        body: { Email: `short-${dialect}@example.test`, Name: 'S', Password: 'short' },
      });
      assert.equal(short.status, 422, short.text);
      assert.ok(!short.text.includes('"short"'), short.text);
    });

    test('GET reads one user (404 for none) and lists them in cursor pages, searching by e-mail', async () => {
      const ids: string[] = [];
      for (const n of [1, 2, 3]) ids.push((await createUser(`page${n}-${dialect}@search.test`)).json.Id);
      const one = await call(server.url, 'GET', `/api/admin/users/${ids[0]}`, { token: reader });
      assert.equal(one.status, 200, one.text);
      assert.equal(one.json.Id, ids[0]);
      const byEmail = await call(server.url, 'GET', `/api/admin/users/page2-${dialect}@search.test`, { token: reader });
      assert.equal(byEmail.json.Id, ids[1], byEmail.text);
      const missing = await call(server.url, 'GET', '/api/admin/users/3f2504e0-4f89-41d3-9a0c-0305e82c3301', {
        token: reader,
      });
      assert.equal(missing.status, 404, missing.text);

      const seen: string[] = [];
      let next: string | undefined = `/api/admin/users?email=${encodeURIComponent(`-${dialect}@search.test`)}&limit=2`;
      for (let page = 0; next && page < 5; page += 1) {
        const listed = await call(server.url, 'GET', next, { token: reader });
        assert.equal(listed.status, 200, listed.text);
        seen.push(...listed.json.Items.map((u: { Id: string }) => u.Id));
        const href: string | undefined = listed.json._links.next?.href;
        next = href ? href.slice(server.url.length) : undefined;
      }
      assert.deepEqual(seen, ids);
      const badCursor = await call(server.url, 'GET', '/api/admin/users?cursor=nope', { token: reader });
      assert.equal(badCursor.status, 400, badCursor.text);
    });

    test('PATCH changes name, e-mail and roles under If-Match (412 when stale); audited per kind', async () => {
      const created = await createUser(`patch-${dialect}@example.test`);
      const id = created.json.Id as string;
      const etag = created.headers.get('etag')!;
      const patched = await admin('PATCH', `/api/admin/users/${id}`, {
        body: { Name: 'Grace', Email: `grace-${dialect}@example.test`, Roles: ['admin'] },
        contentType: 'application/merge-patch+json',
        headers: { 'if-match': etag },
      });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.json.Name, 'Grace');
      assert.deepEqual(patched.json.Roles, ['admin']);
      assert.notEqual(patched.headers.get('etag'), etag);
      const stale = await admin('PATCH', `/api/admin/users/${id}`, {
        body: { Name: 'Stale' },
        headers: { 'if-match': etag },
      });
      assert.equal(stale.status, 412, stale.text);
      assert.deepEqual(
        (await auditOf(id)).map((a) => a.action),
        ['user.created', 'user.updated', 'user.role_changed'],
      );
      const cleared = await admin('PATCH', `/api/admin/users/${id}`, { body: { Roles: [] } });
      assert.deepEqual(cleared.json.Roles, [], cleared.text);
    });

    test('20 concurrent PATCHes under the same If-Match: exactly one 200, the others 412 (no lost update)', async () => {
      const created = await createUser(`race-${dialect}@example.test`);
      const id = created.json.Id as string;
      const etag = created.headers.get('etag')!;
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          admin('PATCH', `/api/admin/users/${id}`, { body: { Name: `Racer ${i}` }, headers: { 'if-match': etag } }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [200, ...Array<number>(19).fill(412)], answers.map((a) => a.text).join('\n'));
      const winner = answers.find((a) => a.status === 200)!;
      const now = await admin('GET', `/api/admin/users/${id}`);
      assert.equal(now.json.Name, winner.json.Name, "the stored name is the winner's");
    });

    test('PUT password: 204, the new password signs in, the old one no longer does; audited without it', async () => {
      const id = (await createUser(`pw-${dialect}@example.test`)).json.Id as string;
      const set = await admin('PUT', `/api/admin/users/${id}/password`, { body: { Password: NEW_PASSWORD } });
      assert.equal(set.status, 204, set.text);
      assert.equal(set.text, '');
      await authorizeWithLogin(server, client, { email: `pw-${dialect}@example.test`, password: NEW_PASSWORD });
      await assert.rejects(
        authorizeWithLogin(server, client, { email: `pw-${dialect}@example.test`, password: PASSWORD }),
        FlowError,
      );
      const audit = await auditOf(id);
      assert.equal(audit.at(-1)?.action, 'user.password_set');
      assert.ok(audit.every((a) => !a.details.includes(NEW_PASSWORD)));
    });

    test('disable: the refresh token dies at once, sign-in is refused generically; enable lets them in again', async () => {
      const email = `disable-${dialect}@example.test`;
      const id = (await createUser(email)).json.Id as string;
      const flow = await authorizeWithLogin(server, client, { email, password: PASSWORD });
      const refreshToken = tokenFrom(await exchangeCode(server, client, flow), 'refresh_token');

      const disabled = await admin('POST', `/api/admin/users/${id}/disable`);
      assert.equal(disabled.status, 200, disabled.text);
      assert.equal(disabled.json.Disabled, true);
      const refused = await refresh(server, client, refreshToken);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error, 'invalid_grant', refused.text);
      const sessions = await server.app.database.db
        .selectFrom('oidc_payloads')
        .select('model')
        .where('account_id', '=', id)
        .execute();
      assert.deepEqual(sessions, [], 'no session, grant or token row is left');

      const login = await authorizeWithLogin(server, client, { email, password: PASSWORD }).then(
        () => assert.fail('a disabled user signed in'),
        (err: unknown) => err as FlowError,
      );
      assert.ok(login instanceof FlowError, String(login));
      const page = login.pages.at(-1)!;
      assert.equal(page.status, 401);
      assert.match(page.html, /The e-mail address or the password is not right/);

      const enabled = await admin('POST', `/api/admin/users/${id}/enable`);
      assert.equal(enabled.json.Disabled, false, enabled.text);
      await authorizeWithLogin(server, client, { email, password: PASSWORD });
      assert.deepEqual(
        (await auditOf(id)).map((a) => a.action),
        ['user.created', 'user.disabled', 'user.enabled'],
      );
    });

    test('DELETE removes the user and their tokens: 204, then 404; audited', async () => {
      const email = `delete-${dialect}@example.test`;
      const id = (await createUser(email)).json.Id as string;
      const flow = await authorizeWithLogin(server, client, { email, password: PASSWORD });
      const refreshToken = tokenFrom(await exchangeCode(server, client, flow), 'refresh_token');
      const deleted = await admin('DELETE', `/api/admin/users/${id}`);
      assert.equal(deleted.status, 204, deleted.text);
      assert.equal((await admin('GET', `/api/admin/users/${id}`)).status, 404);
      assert.equal((await refresh(server, client, refreshToken)).body.error, 'invalid_grant');
      const audit = await auditOf(id);
      assert.equal(audit.at(-1)?.action, 'user.deleted');
      assert.equal(audit.at(-1)?.actor_id, jwtClient(writer));
    });

    test('every users route: 401 without a token, 403 without its admin scope', async () => {
      const id = (await createUser(`guard-${dialect}@example.test`)).json.Id as string;
      const outsider = (await clientToken(['orders:read'])).token;
      const routes: [string, string, unknown, boolean][] = [
        ['GET', '/api/admin/users', undefined, false],
        ['GET', `/api/admin/users/${id}`, undefined, false],
        ['POST', '/api/admin/users', { Email: 'x@example.test', Name: 'X', Password: PASSWORD }, true],
        ['PATCH', `/api/admin/users/${id}`, { Name: 'X' }, true],
        ['PUT', `/api/admin/users/${id}/password`, { Password: NEW_PASSWORD }, true],
        ['POST', `/api/admin/users/${id}/disable`, undefined, true],
        ['POST', `/api/admin/users/${id}/enable`, undefined, true],
        ['DELETE', `/api/admin/users/${id}`, undefined, true],
      ];
      for (const [method, path, body, writes] of routes) {
        assert.equal((await call(server.url, method, path, { body })).status, 401, `${method} ${path}`);
        const refused = await call(server.url, method, path, { body, token: outsider });
        assert.equal(refused.status, 403, `${method} ${path}: ${refused.text}`);
        if (writes) {
          const readOnly = await call(server.url, method, path, { body, token: reader });
          assert.equal(readOnly.status, 403, `${method} ${path} with admin:read only: ${readOnly.text}`);
        }
      }
      assert.equal((await admin('GET', `/api/admin/users/${id}`)).json.Name, 'Ada Admin', 'nothing changed');
    });
  });
}

function jwtClient(token: string): string {
  const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { client_id: string };
  return payload.client_id;
}
