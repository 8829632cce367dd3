// Client owners (docs/guides/admin-api.md, Clients and Owned clients; "Command line"): a client may be
// owned by a Signet user, named by e-mail address in the admin API and `signet client create --owner`; an
// unknown address is refused with a pointer; owner changes are audited; the owner lists their clients
// at GET /api/me/clients with their own token; deleting the user leaves the client ownerless.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, TEST_WEBHOOK_SECRET_KEY, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome } from '../helpers/deadline.ts';
import { expectProblem } from '../helpers/expect.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const MACHINE = {
  client_name: 'Nightly export',
  client_type: 'confidential',
  grant_types: ['client_credentials'],
  scope: 'webhooks:manage',
};

for (const dialect of testDialects()) {
  describe(`client owners [${dialect}]`, () => {
    let server: TestServer;
    let admin: string;
    before(async () => {
      server = await startServer(dialect);
      admin = await server.issuer.clientToken('admin:read admin:write');
    });
    after(() => server.close());

    const api = (method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) =>
      call(server.url, method, path, { token: admin, ...options });

    let users = 0;
    async function createUser(): Promise<{ Id: string; Email: string }> {
      users += 1;
      const res = await api('POST', '/api/admin/users', {
        body: { Email: `Owner${users}-${dialect}@Example.test`, Name: `Owner ${users}`, Password: 'correct horse 1' },
      });
      assert.equal(res.status, 201, res.text);
      return res.json;
    }

    async function createClient(body: Record<string, unknown>): Promise<CallResult> {
      const res = await api('POST', '/api/admin/clients', { body });
      assert.equal(res.status, 201, res.text);
      return res;
    }

    async function auditOf(clientId: string): Promise<{ action: string; details: Record<string, unknown> }[]> {
      const rows = await server.app.database.db
        .selectFrom('audit_log')
        .select(['action', 'details'])
        .where('target_type', '=', 'client')
        .where('target_id', '=', clientId)
        .orderBy('seq')
        .execute();
      return rows.map((r) => ({ action: r.action, details: JSON.parse(r.details) }));
    }

    test('create names the owner by e-mail (any case); read, list and the audit entry show it', async () => {
      const owner = await createUser();
      const created = await createClient({ ...MACHINE, owner: owner.Email.toUpperCase() });
      assert.equal(created.json.owner, owner.Email, created.text);
      const read = await api('GET', `/api/admin/clients/${created.json.client_id}`);
      assert.equal(read.json.owner, owner.Email, read.text);
      const unowned = await createClient(MACHINE);
      assert.equal(unowned.json.owner, null, unowned.text);
      const [entry] = await auditOf(created.json.client_id);
      assert.equal(entry?.action, 'client.created');
      assert.equal(entry?.details.owner, owner.Email, JSON.stringify(entry));
    });

    test('an unknown owner is a 422 pointing at /owner, on create and on PATCH', async () => {
      const refused = await api('POST', '/api/admin/clients', { body: { ...MACHINE, owner: 'nobody@example.test' } });
      const problem = expectProblem(refused, 422, 'validation-error');
      assert.deepEqual(
        (problem.errors as { pointer: string }[]).map((e) => e.pointer),
        ['/owner'],
        refused.text,
      );
      assert.match(String(problem.detail), /nobody@example\.test: no user has this e-mail address/);
      const client = await createClient(MACHINE);
      const patch = await api('PATCH', `/api/admin/clients/${client.json.client_id}`, {
        body: { owner: 'nobody@example.test' },
      });
      const patched = expectProblem(patch, 422, 'validation-error');
      assert.equal((patched.errors as { pointer: string }[])[0]?.pointer, '/owner', patch.text);
      const badType = await api('POST', '/api/admin/clients', { body: { ...MACHINE, owner: 42 } });
      expectProblem(badType, 422, 'validation-error');
    });

    test('PATCH changes and removes the owner; each change is audited with both addresses', async () => {
      const first = await createUser();
      const second = await createUser();
      const client = await createClient({ ...MACHINE, owner: first.Email });
      const id = client.json.client_id;
      const moved = await api('PATCH', `/api/admin/clients/${id}`, { body: { owner: second.Email } });
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.json.owner, second.Email);
      const removed = await api('PATCH', `/api/admin/clients/${id}`, { body: { owner: null } });
      assert.equal(removed.status, 200, removed.text);
      assert.equal(removed.json.owner, null);
      const updates = (await auditOf(id)).filter((e) => e.action === 'client.updated').map((e) => e.details);
      assert.deepEqual(updates, [
        { changed: ['owner'], previous_owner: first.Email, owner: second.Email },
        { changed: ['owner'], previous_owner: second.Email, owner: null },
      ]);
    });

    test('the admin list filters by ?owner=EMAIL; an address nobody has lists nothing', async () => {
      const owner = await createUser();
      const a = await createClient({ ...MACHINE, owner: owner.Email });
      const b = await createClient({ ...MACHINE, owner: owner.Email });
      await createClient(MACHINE);
      const list = await api('GET', `/api/admin/clients?owner=${encodeURIComponent(owner.Email)}&limit=1`);
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(
        list.json.Items.map((c: { client_id: string }) => c.client_id),
        [a.json.client_id],
      );
      const next = await call(
        server.url,
        'GET',
        new URL(list.json._links.next.href).pathname + new URL(list.json._links.next.href).search,
        { token: admin },
      );
      assert.deepEqual(
        next.json.Items.map((c: { client_id: string }) => c.client_id),
        [b.json.client_id],
        next.text,
      );
      const none = await api('GET', '/api/admin/clients?owner=nobody%40example.test');
      assert.deepEqual(none.json.Items, [], none.text);
      const bad = await api('GET', `/api/admin/clients?owner=${encodeURIComponent('a\u0000b@example.test')}`);
      expectProblem(bad, 400, 'invalid-parameter');
    });

    test('GET /api/me/clients lists the caller’s own clients with links to their webhook endpoints', async () => {
      const owner = await createUser();
      const other = await createUser();
      const mine = await createClient({ ...MACHINE, client_name: 'Mine', owner: owner.Email });
      await createClient({ ...MACHINE, client_name: 'Theirs', owner: other.Email });
      const token = await server.issuer.userToken('openid profile', owner.Id);
      const res = await call(server.url, 'GET', '/api/me/clients', { token });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.deepEqual(res.json.Items, [
        {
          ClientId: mine.json.client_id,
          Name: 'Mine',
          _links: { webhooks: { href: `${server.url}/api/webhooks`, method: 'GET' } },
        },
      ]);
      const stranger = await server.issuer.userToken('openid');
      const empty = await call(server.url, 'GET', '/api/me/clients', { token: stranger });
      assert.deepEqual(empty.json.Items, [], empty.text);
      // An outside issuer's subject need not be a UUID: it owns nothing (and is no 500 on PostgreSQL).
      const foreign = await server.issuer.userToken('openid', 'auth0|someone');
      const nothing = await call(server.url, 'GET', '/api/me/clients', { token: foreign });
      assert.equal(nothing.status, 200, nothing.text);
      assert.deepEqual(nothing.json.Items, [], nothing.text);
    });

    test('GET /api/me/clients: 401 without a token, 403 for a client token or without openid, 400 for a bad cursor', async () => {
      const none = await call(server.url, 'GET', '/api/me/clients');
      expectProblem(none, 401, 'unauthorized');
      const machine = await server.issuer.clientToken('openid webhooks:manage');
      expectProblem(await call(server.url, 'GET', '/api/me/clients', { token: machine }), 403, 'forbidden');
      const noOpenid = await server.issuer.userToken('orders:read');
      expectProblem(await call(server.url, 'GET', '/api/me/clients', { token: noOpenid }), 403, 'insufficient-scope');
      const user = await server.issuer.userToken('openid');
      expectProblem(
        await call(server.url, 'GET', '/api/me/clients?cursor=nonsense', { token: user }),
        400,
        'invalid-parameter',
      );
      expectProblem(
        await call(server.url, 'GET', '/api/me/clients?limit=0', { token: user }),
        400,
        'invalid-parameter',
      );
    });

    test('deleting the owner leaves the client without one', async () => {
      const owner = await createUser();
      const client = await createClient({ ...MACHINE, owner: owner.Email });
      const deleted = await api('DELETE', `/api/admin/users/${owner.Id}`);
      assert.equal(deleted.status, 204, deleted.text);
      const read = await api('GET', `/api/admin/clients/${client.json.client_id}`);
      assert.equal(read.status, 200, read.text);
      assert.equal(read.json.owner, null, read.text);
    });
  });

  describe(`signet client create --owner [${dialect}]`, () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase(dialect);
    });
    after(() => database?.drop());
    const run = (args: string[], input?: string) =>
      spawnSync(process.execPath, [BIN, ...args], {
        env: {
          ...process.env,
          LOG_LEVEL: 'silent',
          WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
          DATABASE_URL: database.url,
        },
        encoding: 'utf8',
        input,
        timeout: COMMAND_TIMEOUT_MS,
      });
    const CREATE = [
      'client',
      'create',
      '--name',
      'Shop',
      '--type',
      'confidential',
      '--grant',
      'client_credentials',
      '--scope',
      'webhooks:manage',
    ];

    test('names an existing user as owner, and refuses an unknown address saying which option to change', () => {
      const user = run(
        ['user', 'create', '--email', 'ann@example.test', '--name', 'Ann', '--password-stdin'],
        'correct horse 1\n',
      );
      assert.equal(user.status, 0, outcome(user));
      const created = run([...CREATE, '--owner', 'Ann@Example.test', '--json']);
      assert.equal(created.status, 0, outcome(created));
      assert.equal(JSON.parse(created.stdout).owner, 'ann@example.test', created.stdout);
      const plain = run([...CREATE, '--owner', 'ann@example.test']);
      assert.match(plain.stdout, /^owner: ann@example\.test$/m, outcome(plain));
      const refused = run([...CREATE, '--owner', 'nobody@example.test']);
      assert.equal(refused.status, 2, outcome(refused));
      assert.match(refused.stderr, /--owner nobody@example\.test: no user has this e-mail address/, outcome(refused));
    });
  });
}
