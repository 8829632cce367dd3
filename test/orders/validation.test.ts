// Input rules on every way into an order (create, PUT, both PATCH formats, the list query): exact UUIDs,
// no USD default outside create, one error per bad field naming what is allowed, and the read-only
// members PUT ignores.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const STATUSES = ['pending', 'paid', 'cancelled', 'shipped', 'delivered'];

/** The problem's `errors`, each as "pointer: detail". */
function errorsOf(res: CallResult): string[] {
  return (res.json?.errors ?? []).map((e: { pointer: string; detail: string }) => `${e.pointer}: ${e.detail}`);
}

function assertRejects(res: CallResult, status: number, pointer: string, label: string): void {
  assert.equal(res.status, status, `${label}: ${res.text}`);
  assert.deepEqual(
    res.json.errors.map((e: { pointer: string }) => e.pointer),
    [pointer],
    `${label}: ${res.text}`,
  );
}

for (const dialect of testDialects()) {
  describe(`orders input validation [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const create = async (body: Record<string, unknown> = {}): Promise<CallResult> => {
      const res = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 10, Currency: 'EUR', ...body },
      });
      assert.equal(res.status, 201, res.text);
      return res;
    };
    const write = (method: string, path: string, body: unknown, contentType?: string) =>
      call(server.url, method, path, { token, body, contentType });

    test('a urn:uuid: CustomerId is 422 on create, PUT and PATCH, 400 in the list query, and never stored', async () => {
      const urn = `urn:uuid:${CUSTOMER}`;
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      assertRejects(await write('POST', '/api/orders', { CustomerId: urn, Total: 1 }), 422, '/CustomerId', 'create');
      assertRejects(await write('PUT', path, { ...created.json, CustomerId: urn }), 422, '/CustomerId', 'PUT');
      assertRejects(await write('PATCH', path, { CustomerId: urn }, MERGE), 422, '/CustomerId', 'merge patch');
      assertRejects(
        await write('PATCH', path, [{ op: 'replace', path: '/CustomerId', value: urn }], JSON_PATCH),
        422,
        '/CustomerId',
        'JSON patch',
      );
      const list = await call(server.url, 'GET', `/api/orders?CustomerId=${encodeURIComponent(urn)}`, { token });
      assertRejects(list, 400, '/CustomerId', 'list');
      assert.match(list.json.type, /\/problems\/invalid-parameter$/);
      assert.equal(
        (await call(server.url, 'GET', path, { token })).headers.get('etag'),
        created.headers.get('etag'),
        'the order did not change',
      );
      const upper = await create({ CustomerId: CUSTOMER.toUpperCase() });
      assert.equal(
        upper.json.CustomerId,
        CUSTOMER,
        'a plain UUID in upper case is still accepted, and stored in lower case',
      );
    });

    test('PUT and PATCH never default Currency: leaving it out or removing it is 422 naming /Currency', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      assertRejects(
        await write('PUT', path, { CustomerId: CUSTOMER, Total: 10 }),
        422,
        '/Currency',
        'PUT without Currency',
      );
      assertRejects(await write('PATCH', path, { Currency: null }, MERGE), 422, '/Currency', 'merge patch null');
      assertRejects(
        await write('PATCH', path, [{ op: 'remove', path: '/Currency' }], JSON_PATCH),
        422,
        '/Currency',
        'JSON patch remove',
      );
      const now = await call(server.url, 'GET', path, { token });
      assert.equal(now.json.Currency, 'EUR');
      assert.equal(now.headers.get('etag'), created.headers.get('etag'), 'the order did not change');
      const defaulted = await write('POST', '/api/orders', { CustomerId: CUSTOMER, Total: 1 });
      assert.equal(defaulted.json.Currency, 'USD', 'create still defaults to USD');
    });

    test('an invalid Status is one error naming the allowed values: PUT, both PATCH formats, the list query', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const attempts: [string, CallResult][] = [
        ['merge patch "bogus"', await write('PATCH', path, { Status: 'bogus' }, MERGE)],
        ['JSON patch 3', await write('PATCH', path, [{ op: 'replace', path: '/Status', value: 3 }], JSON_PATCH)],
        ['PUT null', await write('PUT', path, { ...created.json, Status: null })],
        ['PUT "PAID"', await write('PUT', path, { ...created.json, Status: 'PAID' })],
        ['list PAID', await call(server.url, 'GET', '/api/orders?Status=PAID', { token })],
      ];
      for (const [label, res] of attempts) {
        assert.equal(res.status, label.startsWith('list') ? 400 : 422, `${label}: ${res.text}`);
        const errors = errorsOf(res);
        assert.equal(errors.length, 1, `${label}: ${errors.join(' | ')}`);
        assert.ok(errors[0]!.startsWith('/Status: '), `${label}: ${errors[0]}`);
        for (const status of STATUSES) assert.ok(errors[0]!.includes(status), `${label} names ${status}: ${errors[0]}`);
      }
      assert.equal(
        errorsOf(await write('PUT', path, { ...created.json, Currency: null })).length,
        1,
        'Currency null: one error',
      );
    });

    test('a malformed patch document is 400 invalid-patch (RFC 5789 §2.2), not a schema 422: the PATCH schemas only describe it', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      for (const [body, contentType] of [
        [{ op: 'replace', path: '/Total', value: 1 }, JSON_PATCH],
        [[{ op: 'bogus', path: '/Total' }], JSON_PATCH],
        [[{ op: 'replace', value: 1 }], JSON_PATCH],
        [[1], MERGE],
        ['x', MERGE],
      ] as const) {
        const res = await write('PATCH', path, body, contentType);
        assert.equal(res.status, 400, `${contentType} ${JSON.stringify(body)}: ${res.text}`);
        assert.match(res.json.type, /\/problems\/invalid-patch$/);
      }
    });

    test('PUT ignores UpdatedAtUtc, _links and _embedded whatever their value; Id and CreatedAtUtc must match', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      for (const ignored of [
        { UpdatedAtUtc: 'yesterday' },
        { UpdatedAtUtc: null },
        { UpdatedAtUtc: 42 },
        { _links: null },
        { _embedded: 'x' },
      ]) {
        const res = await write('PUT', path, { ...created.json, ...ignored });
        assert.equal(res.status, 200, `${JSON.stringify(ignored)}: ${res.text}`);
        assert.equal(
          res.headers.get('etag'),
          created.headers.get('etag'),
          `${JSON.stringify(ignored)} changes nothing`,
        );
      }
      const merged = await write('PATCH', path, { UpdatedAtUtc: 'yesterday' }, MERGE);
      assert.equal(merged.status, 200, 'a patch is validated like a PUT body');
      assert.equal(merged.json.UpdatedAtUtc, created.json.UpdatedAtUtc);
      assertRejects(
        await write('PUT', path, { ...created.json, CreatedAtUtc: 'yesterday' }),
        422,
        '/CreatedAtUtc',
        'CreatedAtUtc',
      );
      assertRejects(await write('PUT', path, { ...created.json, Id: null }), 422, '/Id', 'Id');
    });
  });
}
