import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

for (const dialect of testDialects()) {
  describe(`orders CRUD [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const create = (body: unknown) => call(server.url, 'POST', '/api/orders', { token, body });

    test('creates an order with 201, an absolute Location, an ETag and the representation', async () => {
      const res = await create({ CustomerId: CUSTOMER.toUpperCase(), Total: 19.99, Currency: 'EUR' });
      expectStatus(res, 201);
      assert.equal(res.headers.get('location'), `${server.url}/api/orders/${res.json.Id}`);
      assert.match(res.headers.get('etag') ?? '', /^"\d+\.1\.[\w-]+"$/);
      assert.equal(res.json.CustomerId, CUSTOMER, 'CustomerId is stored lower-case');
      assert.equal(res.json.Total, 19.99);
      assert.equal(res.json.Currency, 'EUR');
      assert.equal(res.json.Status, 'pending');
      assert.ok(Date.parse(res.json.CreatedAtUtc) > 0);
      assert.deepEqual(Object.keys(res.json._links).sort(), ['cancel', 'delete', 'pay', 'self', 'update']);
      assert.deepEqual(res.json._links.pay, { href: `${server.url}/api/orders/${res.json.Id}/pay`, method: 'POST' });
    });

    test('defaults Currency to USD and keeps the exact decimal Total', async () => {
      const res = await create({ CustomerId: CUSTOMER, Total: 0.1 });
      expectStatus(res, 201);
      assert.equal(res.json.Currency, 'USD');
      assert.equal(res.text.includes('"Total":0.1,'), true);
      const big = await create({ CustomerId: CUSTOMER, Total: 999999999999.99 });
      expectStatus(big, 201);
      assert.equal(big.text.includes('"Total":999999999999.99,'), true);
    });

    test('reads an order with GET and HEAD; 404 for a missing one; 400 for a non-integer id', async () => {
      const created = await create({ CustomerId: CUSTOMER, Total: 5, Currency: 'JPY' });
      const got = await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token });
      expectStatus(got, 200);
      assert.deepEqual(got.json, created.json);
      const head = await call(server.url, 'HEAD', `/api/orders/${created.json.Id}`, { token });
      expectStatus(head, 200);
      assert.equal(head.text, '');
      assert.equal(head.headers.get('etag'), got.headers.get('etag'));
      expectStatus(await call(server.url, 'GET', '/api/orders/999999', { token }), 404);
      for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999', '%00']) {
        const res = await call(server.url, 'GET', `/api/orders/${bad}`, { token });
        assert.equal(res.status, 400, `id ${bad}`);
        assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      }
    });

    test('rejects invalid bodies with 422 naming every bad field by JSON pointer', async () => {
      const res = await create({ CustomerId: 'not-a-guid', Total: '12', Extra: 1 });
      expectStatus(res, 422);
      const pointers = res.json.errors.map((e: { pointer: string }) => e.pointer).sort();
      assert.deepEqual(pointers, ['/CustomerId', '/Extra', '/Total']);
      for (const [body, pointer] of [
        [{ CustomerId: CUSTOMER, Total: 1.234, Currency: 'USD' }, '/Total'],
        [{ CustomerId: CUSTOMER, Total: 1.5, Currency: 'JPY' }, '/Total'],
        [{ CustomerId: CUSTOMER, Total: -1 }, '/Total'],
        [{ CustomerId: CUSTOMER, Total: 1e12 }, '/Total'],
        [{ CustomerId: CUSTOMER, Total: 1, Currency: 'XYZ' }, '/Currency'],
        [{ CustomerId: CUSTOMER, Total: 1, Currency: 'usd' }, '/Currency'],
        [{ Total: 1 }, '/CustomerId'],
      ] as const) {
        const r = await create(body);
        assert.equal(r.status, 422, JSON.stringify(body));
        assert.ok(
          r.json.errors.some((e: { pointer: string }) => e.pointer === pointer),
          `${JSON.stringify(body)} → ${JSON.stringify(r.json.errors)}`,
        );
      }
      const kwd = await create({ CustomerId: CUSTOMER, Total: 1.234, Currency: 'KWD' });
      expectStatus(kwd, 201);
    });

    test('refuses numbers that JSON would silently round', async () => {
      const res = await call(server.url, 'POST', '/api/orders', {
        token,
        rawBody: `{"CustomerId":"${CUSTOMER}","Total":19.999999999999999}`,
      });
      expectStatus(res, 422);
      assert.equal(res.json.errors[0].pointer, '/Total');
    });

    test('lists orders newest first with a cursor and a next link', async () => {
      const ids: number[] = [];
      for (let i = 0; i < 5; i++)
        ids.push((await create({ CustomerId: '11111111-1111-4111-8111-111111111111', Total: i })).json.Id);
      const first = await call(
        server.url,
        'GET',
        '/api/orders?limit=2&CustomerId=11111111-1111-4111-8111-111111111111',
        { token },
      );
      expectStatus(first, 200);
      assert.deepEqual(
        first.json.Items.map((o: { Id: number }) => o.Id),
        [ids[4], ids[3]],
      );
      const link = first.headers.get('link') ?? '';
      const next = /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
      assert.ok(next, link);
      assert.equal(first.json._links.next.href, next);
      const second = await call(server.url, 'GET', next.slice(server.url.length), { token });
      assert.deepEqual(
        second.json.Items.map((o: { Id: number }) => o.Id),
        [ids[2], ids[1]],
      );
      const bad = await call(server.url, 'GET', '/api/orders?cursor=garbage', { token });
      expectStatus(bad, 400);
    });

    test('filters the list by Status, and a cursor keeps the filter it was issued for', async () => {
      const customer = '22222222-2222-4222-8222-222222222222';
      const ids: number[] = [];
      for (let i = 0; i < 4; i++) ids.push((await create({ CustomerId: customer, Total: i })).json.Id);
      for (const id of [ids[0], ids[2], ids[3]])
        expectStatus(await call(server.url, 'POST', `/api/orders/${id}/pay`, { token }), 200);
      const first = await call(server.url, 'GET', `/api/orders?Status=paid&CustomerId=${customer}&limit=2`, { token });
      assert.deepEqual(
        first.json.Items.map((o: { Id: number }) => o.Id),
        [ids[3], ids[2]],
      );
      const next = first.json._links.next.href.slice(server.url.length);
      const second = await call(server.url, 'GET', next, { token });
      assert.deepEqual(
        second.json.Items.map((o: { Id: number }) => o.Id),
        [ids[0]],
      );
      assert.equal(second.json._links.next, undefined);
      const pending = await call(server.url, 'GET', `/api/orders?Status=pending&CustomerId=${customer}`, { token });
      assert.deepEqual(
        pending.json.Items.map((o: { Id: number }) => o.Id),
        [ids[1]],
      );
      const mixed = await call(server.url, 'GET', `${next}&Status=pending`, { token });
      assert.equal(mixed.status, 400, 'a cursor cannot be reused with other filters');
      expectStatus(await call(server.url, 'GET', '/api/orders?Status=lost', { token }), 400);
    });

    test('replaces with PUT from the GET representation, idempotently; a different Id is 422', async () => {
      const created = await create({ CustomerId: CUSTOMER, Total: 10 });
      const path = `/api/orders/${created.json.Id}`;
      const replacement = { ...created.json, Total: 12.5, Currency: 'GBP' };
      const first = await call(server.url, 'PUT', path, { token, body: replacement });
      expectStatus(first, 200);
      assert.equal(first.json.Total, 12.5);
      assert.equal(first.json.Currency, 'GBP');
      const again = await call(server.url, 'PUT', path, { token, body: replacement });
      expectStatus(again, 200);
      assert.equal(again.headers.get('etag'), first.headers.get('etag'), 'a repeated PUT changes nothing');
      const wrongId = await call(server.url, 'PUT', path, { token, body: { ...replacement, Id: created.json.Id + 1 } });
      expectStatus(wrongId, 422);
      assert.equal(wrongId.json.errors[0].pointer, '/Id');
      const minimal = await call(server.url, 'PUT', path, {
        token,
        body: { ...replacement, Total: 13 },
        headers: { prefer: 'return=minimal' },
      });
      expectStatus(minimal, 204);
      assert.equal(minimal.text, '');
      assert.ok(minimal.headers.get('etag'));
    });

    test('patches with merge patch and JSON patch; other media types get 415 with Accept-Patch', async () => {
      const created = await create({ CustomerId: CUSTOMER, Total: 10 });
      const path = `/api/orders/${created.json.Id}`;
      const merge = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 11 },
        contentType: 'application/merge-patch+json',
      });
      expectStatus(merge, 200);
      assert.equal(merge.json.Total, 11);
      const failedTest = await call(server.url, 'PATCH', path, {
        token,
        body: [
          { op: 'replace', path: '/Total', value: 99 },
          { op: 'test', path: '/Total', value: 12 },
        ],
        contentType: 'application/json-patch+json',
      });
      expectStatus(failedTest, 409);
      assert.equal((await call(server.url, 'GET', path, { token })).json.Total, 11, 'a failed test op applies nothing');
      const jsonPatch = await call(server.url, 'PATCH', path, {
        token,
        body: [
          { op: 'test', path: '/Total', value: 11 },
          { op: 'replace', path: '/Total', value: 12 },
        ],
        contentType: 'application/json-patch+json',
      });
      expectStatus(jsonPatch, 200);
      assert.equal(jsonPatch.json.Total, 12);
      for (const contentType of ['application/json', 'text/plain']) {
        const res = await call(server.url, 'PATCH', path, { token, rawBody: '{"Total":1}', contentType });
        assert.equal(res.status, 415, contentType);
        assert.equal(res.headers.get('accept-patch'), 'application/merge-patch+json, application/json-patch+json');
      }
      const pay = await call(server.url, 'PATCH', path, {
        token,
        body: { Status: 'paid' },
        contentType: 'application/merge-patch+json',
      });
      expectStatus(pay, 200);
      assert.equal(pay.json.Status, 'paid');
      const back = await call(server.url, 'PATCH', path, {
        token,
        body: { Status: 'pending' },
        contentType: 'application/merge-patch+json',
      });
      expectStatus(back, 409);
      assert.equal(back.json.currentStatus, 'paid');
    });

    test('deletes pending and cancelled orders (204, then 404); a paid order is 409', async () => {
      const pending = await create({ CustomerId: CUSTOMER, Total: 1 });
      const path = `/api/orders/${pending.json.Id}`;
      expectStatus(await call(server.url, 'DELETE', path, { token }), 204);
      expectStatus(await call(server.url, 'DELETE', path, { token }), 404);
      expectStatus(await call(server.url, 'GET', path, { token }), 404);
      const paid = await create({ CustomerId: CUSTOMER, Total: 1 });
      await call(server.url, 'POST', `/api/orders/${paid.json.Id}/pay`, { token });
      const refused = await call(server.url, 'DELETE', `/api/orders/${paid.json.Id}`, { token });
      expectStatus(refused, 409);
      assert.equal(refused.json.currentStatus, 'paid');
    });
  });
}
