// Rights are live (docs/security.md, "Roles"): a token records what its user was granted when it was issued,
// but every API request checks the user's roles and disabled state as they are now. A demoted admin's
// unexpired token is refused on the next admin write, a disabled user's tokens stop on every API; the
// `auditor` role reads everything an admin reads and changes nothing. Through real HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cliActor } from '../../src/audit/audit.ts';
import { createUsersService } from '../../src/auth-server/identity/users.service.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { authorizeWithLogin, exchangeCode, tokenFrom } from '../helpers/oauth-requests.ts';

const PASSWORD = 'a long enough password';
const SCOPES = 'openid orders:read orders:write events:read admin:read admin:write';
const by = { actor: cliActor() };

function assertProblem(response: CallResult, status: number, what: string): void {
  assert.equal(response.status, status, `${what}: ${response.text}`);
  assert.match(response.headers.get('content-type') ?? '', /application\/problem\+json/, response.text);
}

for (const dialect of testDialects()) {
  describe(`rights follow the user's current roles and state [${dialect}]`, () => {
    let server: AuthTestServer;
    let client: { clientId: string; clientSecret: string | undefined; redirectUri: string };
    let users: ReturnType<typeof createUsersService>;
    let n = 0;

    before(async () => {
      server = await startAuthServer(dialect);
      users = createUsersService({ db: server.app.database.db });
      client = await server.createClient({ scopes: SCOPES.split(' ') });
    });
    after(() => server.close());

    /** A user with these roles, signed in through the authorization code flow: their access token. */
    async function userWithToken(roles: string[]): Promise<{ id: string; token: string }> {
      const email = `user-${++n}-${dialect}@example.test`;
      const user = await users.create({ email, name: `User ${n}`, password: PASSWORD, roles }, by);
      const flow = await authorizeWithLogin(server, client, { email, password: PASSWORD }, { scope: SCOPES });
      return { id: user.id, token: tokenFrom(await exchangeCode(server, client, flow)) };
    }

    const newAdmin = (token: string): Promise<CallResult> =>
      call(server.url, 'POST', '/api/admin/users', {
        token,
        body: { Email: `made-${++n}-${dialect}@example.test`, Name: 'Made', Password: PASSWORD, Roles: ['admin'] },
      });

    test('a demoted admin’s unexpired token cannot create an admin on the next request (403)', async () => {
      const demoted = await userWithToken(['admin']);
      const other = await userWithToken(['admin']);
      assert.equal((await newAdmin(demoted.token)).status, 201, 'the admin could before');
      const read = await call(server.url, 'GET', `/api/admin/users/${demoted.id}`, { token: other.token });
      const patched = await call(server.url, 'PATCH', `/api/admin/users/${demoted.id}`, {
        token: other.token,
        body: { Roles: [] },
        headers: { 'if-match': read.headers.get('etag')! },
      });
      assert.equal(patched.status, 200, patched.text);
      const refused = await newAdmin(demoted.token);
      assertProblem(refused, 403, 'the same token after the demotion');
      assert.match(refused.headers.get('www-authenticate') ?? '', /insufficient_scope/);
      assertProblem(await call(server.url, 'GET', '/api/admin/users', { token: demoted.token }), 403, 'a read');
      // The rest of what the token was granted still works: only the role's scopes went.
      const orders = await call(server.url, 'GET', '/api/orders', { token: demoted.token });
      assert.equal(orders.status, 200, orders.text);
    });

    test('an admin made auditor keeps reading and can no longer write', async () => {
      const user = await userWithToken(['admin']);
      const other = await userWithToken(['admin']);
      const read = await call(server.url, 'GET', `/api/admin/users/${user.id}`, { token: other.token });
      const patched = await call(server.url, 'PATCH', `/api/admin/users/${user.id}`, {
        token: other.token,
        body: { Roles: ['auditor'] },
        headers: { 'if-match': read.headers.get('etag')! },
      });
      assert.equal(patched.status, 200, patched.text);
      assertProblem(await newAdmin(user.token), 403, 'a write as auditor');
      const list = await call(server.url, 'GET', '/api/admin/users', { token: user.token });
      assert.equal(list.status, 200, list.text);
    });

    test('a disabled user’s tokens stop at once on the orders, events (webhooks) and admin APIs (401)', async () => {
      const admin = await userWithToken(['admin']);
      const disabled = await userWithToken(['admin']);
      for (const path of ['/api/orders', '/api/events', '/api/admin/users'])
        assert.equal((await call(server.url, 'GET', path, { token: disabled.token })).status, 200, path);
      const off = await call(server.url, 'POST', `/api/admin/users/${disabled.id}/disable`, { token: admin.token });
      assert.equal(off.status, 200, off.text);
      for (const [method, path] of [
        ['GET', '/api/orders'],
        ['GET', '/api/events'],
        ['GET', '/api/admin/users'],
        ['POST', '/api/admin/users'],
      ] as const) {
        const refused = await call(server.url, method, path, {
          token: disabled.token,
          body: method === 'POST' ? {} : undefined,
        });
        assertProblem(refused, 401, `${method} ${path} with a disabled user's token`);
        assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/, refused.text);
      }
      // Enabled again, the same unexpired token works again: the state is read, not remembered.
      const on = await call(server.url, 'POST', `/api/admin/users/${disabled.id}/enable`, { token: admin.token });
      assert.equal(on.status, 200, on.text);
      assert.equal((await call(server.url, 'GET', '/api/orders', { token: disabled.token })).status, 200);
    });

    test('a deleted user’s token is refused (401)', async () => {
      const admin = await userWithToken(['admin']);
      const gone = await userWithToken([]);
      const removed = await call(server.url, 'DELETE', `/api/admin/users/${gone.id}`, { token: admin.token });
      assert.equal(removed.status, 204, removed.text);
      assertProblem(await call(server.url, 'GET', '/api/orders', { token: gone.token }), 401, 'a deleted user');
    });

    test('an auditor reads every admin route and is refused every admin write (403)', async () => {
      const auditor = await userWithToken(['auditor']);
      const document = (await call(server.url, 'GET', '/openapi.json')).json as {
        paths: Record<string, Record<string, unknown>>;
      };
      const routes = Object.entries(document.paths)
        .filter(([path]) => path.startsWith('/api/admin/'))
        .flatMap(([path, operations]) =>
          Object.keys(operations)
            .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
            .map((method) => ({ method: method.toUpperCase(), path })),
        );
      assert.ok(routes.filter((r) => r.method === 'GET').length >= 10, JSON.stringify(routes));
      assert.ok(routes.filter((r) => r.method !== 'GET').length >= 10, JSON.stringify(routes));
      for (const { method, path } of routes) {
        // A made-up id: a read gets past the scope check (then 200, or 404 for an id that does not exist).
        const url = path.replace(/\{[^}]+\}/g, 'unknown');
        const response = await call(server.url, method, url, {
          token: auditor.token,
          body: method === 'GET' || method === 'DELETE' ? undefined : {},
        });
        if (method === 'GET') {
          assert.ok(![401, 403].includes(response.status), `${method} ${path}: ${response.status} ${response.text}`);
          assert.ok(response.status < 500, `${method} ${path}: ${response.text}`);
        } else {
          assertProblem(response, 403, `${method} ${path}`);
          assert.match(response.headers.get('www-authenticate') ?? '', /scope="admin:write"/, `${method} ${path}`);
        }
      }
    });

    test('an auditor’s token never carries admin:write', async () => {
      const auditor = await userWithToken(['auditor']);
      const scope = JSON.parse(Buffer.from(auditor.token.split('.')[1]!, 'base64url').toString()).scope as string;
      assert.ok(scope.split(' ').includes('admin:read'), scope);
      assert.ok(!scope.split(' ').includes('admin:write'), scope);
    });
  });
}
