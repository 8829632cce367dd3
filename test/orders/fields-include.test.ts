// Sparse fieldsets (`fields=`) and embedded related data (`include=`) on the order and list endpoints.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';

function assertProblemNaming(res: CallResult, parameter: string, name: string): void {
  expectProblem(res, 400, 'invalid-parameter');
  assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  assert.ok(res.json.detail.includes(JSON.stringify(name)), `detail names ${name}: ${res.json.detail}`);
  assert.equal(res.json.errors?.[0]?.pointer, `/${parameter}`);
}

for (const dialect of testDialects()) {
  describe(`orders fields= and include= [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const create = async (customer: string, total = 12.5) => {
      const res = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: customer, Total: total, Currency: 'EUR' },
      });
      expectStatus(res, 201);
      return res.json;
    };
    const get = (path: string) => call(server.url, 'GET', path, { token });

    test('fields=Id,Total returns exactly those members with their values', async () => {
      const order = await create(randomUUID());
      const res = await get(`/api/orders/${order.Id}?fields=Id,Total`);
      expectStatus(res, 200);
      assert.deepEqual(res.json, { Id: order.Id, Total: 12.5 });
      assert.equal(res.text, `{"Id":${order.Id},"Total":12.5}`);
      const links = await get(`/api/orders/${order.Id}?fields=_links,Status`);
      assert.deepEqual(Object.keys(links.json).sort(), ['Status', '_links']);
      assert.deepEqual(links.json._links, order._links);
      const every = await get(
        `/api/orders/${order.Id}?fields=Id,CustomerId,Total,Currency,Status,CreatedAtUtc,UpdatedAtUtc,_links`,
      );
      assert.deepEqual(every.json, order, 'naming every member gives the full representation');
    });

    test('duplicate and space-padded names in fields are ignored', async () => {
      const order = await create(randomUUID());
      const plain = await get(`/api/orders/${order.Id}?fields=Id,Total`);
      for (const query of [
        'fields=Id,Total,Id',
        'fields=Id,Id,Total,Total',
        'fields=Id,%20Total',
        'fields=Id,,Total,',
      ]) {
        const res = await get(`/api/orders/${order.Id}?${query}`);
        assert.equal(res.status, 200, query);
        assert.equal(res.text, plain.text, query);
        assert.equal(res.headers.get('etag'), plain.headers.get('etag'), `${query} is the same variant`);
      }
    });

    test('fields works on the list endpoint, for every item', async () => {
      const customer = randomUUID();
      const a = await create(customer, 1);
      const b = await create(customer, 2);
      const res = await get(`/api/orders?CustomerId=${customer}&fields=Id,Total,Status`);
      expectStatus(res, 200);
      assert.deepEqual(res.json.Items, [
        { Id: b.Id, Total: 2, Status: 'pending' },
        { Id: a.Id, Total: 1, Status: 'pending' },
      ]);
      assert.ok(
        res.json._links.self.href.includes('fields=Id,Total,Status') ||
          res.json._links.self.href.includes('fields=Id%2CTotal%2CStatus'),
      );
      const paged = await get(`/api/orders?CustomerId=${customer}&fields=Id&limit=1`);
      assert.deepEqual(paged.json.Items, [{ Id: b.Id }]);
      const next = await get(paged.json._links.next.href.slice(server.url.length));
      expectStatus(next, 200);
      assert.deepEqual(next.json.Items, [{ Id: a.Id }], 'the next link keeps the field selection');
    });

    test('an unknown member in fields is a 400 problem naming it, on the order and on the list', async () => {
      const order = await create(randomUUID());
      for (const path of [`/api/orders/${order.Id}`, '/api/orders']) {
        assertProblemNaming(await get(`${path}?fields=Id,Bogus`), 'fields', 'Bogus');
        assertProblemNaming(await get(`${path}?fields=id`), 'fields', 'id');
        assertProblemNaming(await get(`${path}?fields=_embedded`), 'fields', '_embedded');
        const empty = await get(`${path}?fields=`);
        assert.equal(empty.status, 400, `${path}: an empty selection`);
      }
    });

    test('an unknown include is a 400 problem naming it', async () => {
      const order = await create(randomUUID());
      for (const path of [`/api/orders/${order.Id}`, '/api/orders']) {
        assertProblemNaming(await get(`${path}?include=items`), 'include', 'items');
        assertProblemNaming(await get(`${path}?include=history,lines`), 'include', 'lines');
      }
    });

    test('include=history embeds _embedded.history, also together with fields and on the list', async () => {
      const customer = randomUUID();
      const order = await create(customer);
      expectStatus(await call(server.url, 'POST', `/api/orders/${order.Id}/pay`, { token }), 200);
      const res = await get(`/api/orders/${order.Id}?include=history`);
      expectStatus(res, 200);
      assert.deepEqual(
        res.json._embedded.history.map((h: { Status: string }) => h.Status),
        ['pending', 'paid'],
      );
      for (const entry of res.json._embedded.history) assert.deepEqual(Object.keys(entry).sort(), ['AtUtc', 'Status']);
      assert.equal(res.json.Status, 'paid');
      assert.ok(res.json._links, 'the full representation plus the embedded data');
      assert.equal(
        (await get(`/api/orders/${order.Id}`)).json._embedded,
        undefined,
        'nothing embedded without include',
      );
      const sparse = await get(`/api/orders/${order.Id}?fields=Id&include=history`);
      assert.deepEqual(Object.keys(sparse.json).sort(), ['Id', '_embedded']);
      assert.deepEqual(sparse.json._embedded, res.json._embedded);
      const listed = await get(`/api/orders?CustomerId=${customer}&include=history&fields=Id`);
      assert.deepEqual(listed.json.Items, [{ Id: order.Id, _embedded: res.json._embedded }]);
      const twice = await get(`/api/orders/${order.Id}?include=history,history`);
      assert.equal(twice.text, res.text);
    });
  });
}
