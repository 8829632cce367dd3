// Bad input to the admin API never costs a 500 (docs/guides/admin-api.md): times outside what both databases
// store (years 0001 to 9999), ids that are not of their column's type and U+0000 (PostgreSQL refuses it in
// text, 22021) are refused with the most specific 4xx before they reach SQL: 400 for the path, query and
// cursor, 422 for a body member.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encodeCursor } from '../../src/http/representation/cursor.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const NUL = '%00';
const YEAR_ZERO = '0000-01-01T00:00:00Z';
// 0001-01-01 at +01:00 is year 0 in UTC.
const BEFORE_YEAR_ONE = '0001-01-01T00:00:00%2B01:00';
const cursor = (payload: Record<string, string | number>): string => encodeCursor(payload);

function expectProblem(res: CallResult, status: number, label: string, pointer?: string): void {
  assert.equal(res.status, status, `${label}: ${res.status} ${res.text}`);
  assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8', `${label}: ${res.text}`);
  if (pointer)
    assert.ok(
      (res.json.errors as { pointer: string }[]).some((e) => e.pointer === pointer),
      `${label}: names ${pointer}: ${res.text}`,
    );
}

for (const dialect of testDialects()) {
  describe(`admin API: bad input is a 4xx, never a 500 [${dialect}]`, () => {
    let server: TestServer;
    let admin: string;
    before(async () => {
      server = await startServer(dialect);
      admin = await server.issuer.clientToken('admin:read admin:write');
    });
    after(() => server.close());

    const api = (method: string, path: string, body?: unknown): Promise<CallResult> =>
      call(server.url, method, path, { token: admin, body });

    test('users list: a cursor with a time that is not storable or an id that is not a UUID is a 400', async () => {
      const uuid = '00000000-0000-4000-8000-000000000000';
      for (const bad of [
        { c: 'x', i: 'y' },
        { c: 'x', i: uuid },
        { c: YEAR_ZERO, i: uuid },
        { c: '+010000-01-01T00:00:00.000Z', i: uuid },
        { c: '2024-01-01T00:00:00.000Z', i: 'y' },
        { c: '2024-01-01T00:00:00.000Z', i: `${uuid}\u0000` },
      ]) {
        const res = await api('GET', `/api/admin/users?cursor=${cursor(bad)}`);
        expectProblem(res, 400, `users cursor ${JSON.stringify(bad)}`, '/cursor');
      }
    });

    test('clients list: a cursor with a time that is not storable or a control character is a 400', async () => {
      for (const bad of [
        { c: 'x', i: 'y' },
        { c: YEAR_ZERO, i: 'cl_x' },
        { c: '2024-01-01T00:00:00.000Z', i: 'cl_\u0000' },
      ]) {
        const res = await api('GET', `/api/admin/clients?cursor=${cursor(bad)}`);
        expectProblem(res, 400, `clients cursor ${JSON.stringify(bad)}`, '/cursor');
      }
    });

    test('audit: since and until outside years 0001 to 9999 are a 400 naming the parameter', async () => {
      for (const name of ['since', 'until'])
        for (const time of [BEFORE_YEAR_ONE, YEAR_ZERO]) {
          const res = await api('GET', `/api/admin/audit?${name}=${time}`);
          expectProblem(res, 400, `audit ${name}=${time}`, `/${name}`);
        }
    });

    test('webhook stats: a window outside years 0001 to 9999 is a 400 naming the parameter', async () => {
      for (const name of ['since', 'until'])
        for (const time of [BEFORE_YEAR_ONE, YEAR_ZERO]) {
          const res = await api('GET', `/api/admin/webhook-stats?client_id=cl_x&${name}=${time}`);
          expectProblem(res, 400, `webhook-stats ${name}=${time}`, `/${name}`);
        }
    });

    test('webhook endpoints: a cursor with a time that is not storable or an id not of an endpoint is a 400', async () => {
      for (const bad of [
        { t: -8.64e15, i: 'whep_00000000000000000000000000000000' },
        { t: 1.5, i: 'whep_00000000000000000000000000000000' },
        { t: 1, i: 'a\u0000' },
      ]) {
        const res = await api('GET', `/api/admin/webhook-endpoints?cursor=${cursor(bad)}`);
        expectProblem(res, 400, `endpoints cursor ${JSON.stringify(bad)}`, '/cursor');
      }
    });

    test('U+0000 in a path or query parameter is a 400', async () => {
      for (const [method, path] of [
        ['GET', `/api/admin/audit?actor=${NUL}`],
        ['GET', `/api/admin/audit?target=a${NUL}`],
        ['GET', `/api/admin/users?email=a${NUL}`],
        ['GET', `/api/admin/users/${NUL}`],
        ['GET', `/api/admin/users/${NUL}/grants`],
        ['GET', `/api/admin/users/${NUL}/sessions`],
        ['GET', `/api/admin/clients/cl_${NUL}`],
        ['GET', `/api/admin/clients/cl_${NUL}/grants`],
        ['DELETE', `/api/admin/clients/cl_${NUL}`],
        ['DELETE', `/api/admin/grants/${NUL}`],
        ['DELETE', `/api/admin/sessions/${NUL}`],
        ['GET', `/api/admin/webhook-endpoints?client_id=${NUL}`],
        ['GET', `/api/admin/webhook-stats?client_id=${NUL}`],
      ] as const) {
        const res = await api(method, path);
        expectProblem(res, 400, `${method} ${path}`);
      }
    });

    test('U+0000 in a user’s e-mail or name is a 422 naming the member', async () => {
      const password = 'correct horse battery staple';
      const email = await api('POST', '/api/admin/users', {
        Email: `a\u0000b@example.test`,
        Name: 'N',
        Password: password,
      });
      expectProblem(email, 422, 'Email with NUL', '/Email');
      const name = await api('POST', '/api/admin/users', {
        Email: `nul-${dialect}@example.test`,
        Name: 'a\u0000',
        Password: password,
      });
      expectProblem(name, 422, 'Name with NUL', '/Name');
      const created = await api('POST', '/api/admin/users', {
        Email: `ok-${dialect}@example.test`,
        Name: 'Ok',
        Password: password,
      });
      assert.equal(created.status, 201, created.text);
      const patched = await api('PATCH', `/api/admin/users/${created.json.Id}`, { Name: 'b\u0000' });
      expectProblem(patched, 422, 'PATCH Name with NUL', '/Name');
    });

    test('U+0000 in a client’s name or redirect URIs is a 422 naming the member', async () => {
      const body = {
        client_name: 'Shop',
        client_type: 'confidential',
        grant_types: ['authorization_code'],
        redirect_uris: ['https://shop.example/callback'],
        scope: 'openid',
      };
      expectProblem(
        await api('POST', '/api/admin/clients', { ...body, client_name: 'S\u0000' }),
        422,
        'client_name',
        '/client_name',
      );
      const uris = ['https://shop.example/callback', 'https://shop.example/cb\u0000'];
      expectProblem(
        await api('POST', '/api/admin/clients', { ...body, redirect_uris: uris }),
        422,
        'redirect_uris',
        '/redirect_uris/1',
      );
    });
  });
}
