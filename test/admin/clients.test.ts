// The admin API's clients (docs/guides/admin-api.md, Clients): list in cursor pages, read, create (the
// secret once), update by merge patch with If-Match and the rules of a new client (422 with pointers),
// rotate the secret (once), delete with every grant and token; each change audited without a secret.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashClientSecret } from '../../src/auth-server/clients/clients.repository.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const MACHINE = {
  client_name: 'Nightly export',
  client_type: 'confidential',
  grant_types: ['client_credentials'],
  scope: 'orders:read',
};
const WEB_APP = {
  client_name: 'Shop front',
  client_type: 'confidential',
  grant_types: ['authorization_code', 'refresh_token'],
  redirect_uris: ['https://shop.example/callback'],
  scope: 'openid profile orders:read',
};

for (const dialect of testDialects()) {
  describe(`admin API: clients [${dialect}]`, () => {
    let server: TestServer;
    let admin: string;
    before(async () => {
      server = await startServer(dialect);
      admin = await server.issuer.clientToken('admin:read admin:write');
    });
    after(() => server.close());

    const api = (method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) =>
      call(server.url, method, path, { token: admin, ...options });

    async function auditOf(clientId: string): Promise<{ action: string; details: string }[]> {
      return server.app.database.db
        .selectFrom('audit_log')
        .select(['action', 'details'])
        .where('target_type', '=', 'client')
        .where('target_id', '=', clientId)
        .orderBy('occurred_at')
        .execute();
    }

    async function create(body: Record<string, unknown>): Promise<CallResult> {
      const res = await api('POST', '/api/admin/clients', { body });
      assert.equal(res.status, 201, res.text);
      return res;
    }

    test('create answers 201 with Location and the secret once; read and list never show it', async () => {
      const res = await create(MACHINE);
      const secret = String(res.json.client_secret);
      assert.match(secret, /^scs_[A-Za-z0-9_-]{43}$/);
      assert.match(res.json.client_id, /^cl_[0-9a-f]{32}$/);
      assert.equal(res.headers.get('location'), `${server.url}/api/admin/clients/${res.json.client_id}`);
      assert.equal(res.json.client_name, 'Nightly export');
      assert.equal(res.json.scope, 'orders:read');
      assert.deepEqual(res.json.grant_types, ['client_credentials']);
      const row = await server.app.database.db
        .selectFrom('oauth_clients')
        .select('secret_hash')
        .where('id', '=', res.json.client_id)
        .executeTakeFirstOrThrow();
      assert.equal(row.secret_hash, hashClientSecret(secret), 'only the hash is stored');
      const read = await api('GET', `/api/admin/clients/${res.json.client_id}`);
      assert.equal(read.status, 200, read.text);
      assert.ok(read.headers.get('etag'));
      assert.ok(!read.text.includes(secret) && !('client_secret' in read.json), read.text);
      const list = await api('GET', '/api/admin/clients?limit=100');
      assert.equal(list.status, 200, list.text);
      assert.ok(list.json.Items.some((c: { client_id: string }) => c.client_id === res.json.client_id));
      assert.ok(!list.text.includes(secret));
      const audit = await auditOf(res.json.client_id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['client.created'],
      );
      assert.ok(!JSON.stringify(audit).includes(secret), 'no secret in the audit trail');
    });

    test('a public client has no secret in its 201', async () => {
      const res = await create({
        client_name: 'SPA',
        client_type: 'public',
        grant_types: ['authorization_code'],
        redirect_uris: ['http://localhost:5173/cb'],
        cors_origins: ['http://localhost:5173'],
      });
      assert.equal(res.json.client_secret, undefined, res.text);
      const rotate = await api('POST', `/api/admin/clients/${res.json.client_id}/rotate-secret`);
      assert.equal(rotate.status, 409, rotate.text);
      assert.match(rotate.json.type, /public-client$/);
    });

    test('create refuses what the CLI refuses, 422 with a pointer at the member', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ ...WEB_APP, redirect_uris: ['http://shop.example/cb'] }, '/redirect_uris/0'],
        [{ ...WEB_APP, redirect_uris: [] }, '/redirect_uris'],
        [{ ...MACHINE, client_type: 'public' }, '/grant_types'],
        [{ ...MACHINE, scope: 'orders:read nonsense' }, '/scope/1'],
        [{ ...MACHINE, scope: 'openid' }, '/scope/0'],
        [{ ...WEB_APP, cors_origins: ['https://shop.example/path'] }, '/cors_origins/0'],
        [{ ...MACHINE, client_name: '  ' }, '/client_name'],
      ];
      for (const [body, pointer] of cases) {
        const res = await api('POST', '/api/admin/clients', { body });
        assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
        assert.equal(res.json.errors?.[0]?.pointer, pointer, res.text);
      }
    });

    test('the list pages with a cursor, oldest first', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) ids.push((await create({ ...MACHINE, client_name: `Paged ${i}` })).json.client_id);
      const seen: string[] = [];
      let next: string | undefined = '/api/admin/clients?limit=2';
      for (let page = 0; next && page < 50; page += 1) {
        const res = await api('GET', next);
        assert.equal(res.status, 200, res.text);
        assert.ok(res.json.Items.length <= 2);
        seen.push(...res.json.Items.map((c: { client_id: string }) => c.client_id));
        const href = res.json._links.next?.href as string | undefined;
        next = href ? href.slice(server.url.length) : undefined;
        if (href) assert.equal(res.headers.get('link'), `<${href}>; rel="next"`);
      }
      assert.equal(new Set(seen).size, seen.length, 'no client twice');
      assert.deepEqual(
        seen.filter((id) => ids.includes(id)),
        ids,
        'each new client once, in creation order',
      );
      const bad = await api('GET', '/api/admin/clients?cursor=garbage');
      assert.equal(bad.status, 400, bad.text);
    });

    test('20 concurrent PATCHes under the same If-Match: exactly one 200, the others 412 (no lost update)', async () => {
      const created = await create(WEB_APP);
      const path = `/api/admin/clients/${created.json.client_id}`;
      const etag = (await api('GET', path)).headers.get('etag')!;
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          api('PATCH', path, { body: { client_name: `Racer ${i}` }, headers: { 'if-match': etag } }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [200, ...Array<number>(19).fill(412)], answers.map((a) => a.text).join('\n'));
      const winner = answers.find((a) => a.status === 200)!;
      assert.equal((await api('GET', path)).json.client_name, winner.json.client_name);
    });

    test('PATCH merges the changes under If-Match, with the rules of a new client', async () => {
      const created = await create(WEB_APP);
      const path = `/api/admin/clients/${created.json.client_id}`;
      const etag = (await api('GET', path)).headers.get('etag')!;
      const patched = await api('PATCH', path, {
        body: {
          client_name: 'Shop front (new)',
          redirect_uris: ['https://shop.example/cb2', 'http://127.0.0.1:8080/cb'],
          post_logout_redirect_uris: ['https://shop.example/bye'],
          scope: 'openid orders:read orders:write',
          cors_origins: ['https://shop.example'],
          first_party: true,
        },
        headers: { 'if-match': etag, 'content-type': 'application/merge-patch+json' },
      });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.json.client_name, 'Shop front (new)');
      assert.deepEqual(patched.json.redirect_uris, ['https://shop.example/cb2', 'http://127.0.0.1:8080/cb']);
      assert.deepEqual(patched.json.post_logout_redirect_uris, ['https://shop.example/bye']);
      assert.equal(patched.json.scope, 'openid orders:read orders:write');
      assert.deepEqual(patched.json.cors_origins, ['https://shop.example']);
      assert.equal(patched.json.first_party, true);
      assert.deepEqual(patched.json.grant_types, WEB_APP.grant_types, 'untouched members stay');
      assert.notEqual(patched.headers.get('etag'), etag);

      const stale = await api('PATCH', path, { body: { client_name: 'Lost update' }, headers: { 'if-match': etag } });
      assert.equal(stale.status, 412, stale.text);
      const invalid = await api('PATCH', path, { body: { redirect_uris: ['https://shop.example/cb#frag'] } });
      assert.equal(invalid.status, 422, invalid.text);
      assert.equal(invalid.json.errors?.[0]?.pointer, '/redirect_uris/0', invalid.text);
      const emptied = await api('PATCH', path, { body: { redirect_uris: [] } });
      assert.equal(emptied.status, 422, emptied.text);
      const unchanged = await api('GET', path);
      assert.equal(unchanged.json.client_name, 'Shop front (new)', 'a refused PATCH changes nothing');
      const fixedMember = await api('PATCH', path, { body: { grant_types: ['client_credentials'] } });
      assert.equal(fixedMember.status, 422, fixedMember.text);
      const audit = await auditOf(created.json.client_id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['client.created', 'client.updated'],
      );
      assert.match(audit[1]!.details, /client_name/);
    });

    test('rotate-secret returns the new secret once and replaces the hash', async () => {
      const created = await create(MACHINE);
      const rotated = await api('POST', `/api/admin/clients/${created.json.client_id}/rotate-secret`);
      assert.equal(rotated.status, 200, rotated.text);
      assert.match(rotated.json.client_secret, /^scs_/);
      assert.notEqual(rotated.json.client_secret, created.json.client_secret);
      assert.ok(rotated.json.secret_rotated_at);
      const row = await server.app.database.db
        .selectFrom('oauth_clients')
        .select('secret_hash')
        .where('id', '=', created.json.client_id)
        .executeTakeFirstOrThrow();
      assert.equal(row.secret_hash, hashClientSecret(rotated.json.client_secret));
      const audit = await auditOf(created.json.client_id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['client.created', 'client.secret_rotated'],
      );
      assert.ok(!JSON.stringify(audit).includes(rotated.json.client_secret));
      const missing = await api('POST', '/api/admin/clients/cl_missing/rotate-secret');
      assert.equal(missing.status, 404, missing.text);
    });

    test('DELETE removes the client with every grant and token issued to it', async () => {
      const created = await create(WEB_APP);
      const clientId = created.json.client_id as string;
      await server.app.database.db
        .insertInto('oidc_payloads')
        .values({
          model: 'RefreshToken',
          id: `rt-of-${clientId}`,
          payload: '{}',
          grant_id: null,
          client_id: clientId,
          account_id: null,
          user_code: null,
          uid: null,
          expires_at: toDbTime(new Date(Date.now() + 3_600_000)),
          consumed_at: null,
        })
        .execute();
      const res = await api('DELETE', `/api/admin/clients/${clientId}`);
      assert.equal(res.status, 204, res.text);
      assert.equal((await api('GET', `/api/admin/clients/${clientId}`)).status, 404);
      const tokens = await server.app.database.db
        .selectFrom('oidc_payloads')
        .select('id')
        .where('client_id', '=', clientId)
        .execute();
      assert.deepEqual(tokens, [], 'its tokens went with it');
      assert.deepEqual(
        (await auditOf(clientId)).map((a) => a.action),
        ['client.created', 'client.deleted'],
      );
      assert.equal((await api('DELETE', `/api/admin/clients/${clientId}`)).status, 404);
    });

    test('a token with admin:read only reads; changes need admin:write', async () => {
      const reader = await server.issuer.clientToken('admin:read');
      assert.equal((await call(server.url, 'GET', '/api/admin/clients', { token: reader })).status, 200);
      const refused = await call(server.url, 'POST', '/api/admin/clients', { token: reader, body: MACHINE });
      assert.equal(refused.status, 403, refused.text);
    });
  });
}
