// Every error leaves as application/problem+json (RFC 9457) with the same members, the most specific
// status applies (404/405/400/413/415), request ids are only taken from trusted peers, and server
// faults never leak internals.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startServer, startWithClientToken, type TestServer } from '../helpers/server.ts';
import { rawRequest } from './raw-http.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The problem+json shape every error shares: an absolute `type`, the members, the request id of the
 * header, and an `instance` absolute on the same base as `type` and the resources' links (one base for
 * every URL written).
 */
const SHAPE = { exactMediaType: true, members: true, requestId: true, absoluteType: true } as const;

for (const dialect of testDialects()) {
  describe(`problem responses [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect, { BODY_LIMIT_BYTES: '1024' })));
    after(() => server.close());

    const post = (rawBody: string, contentType = 'application/json') =>
      call(server.url, 'POST', '/api/orders', { token, rawBody, contentType });

    test('an unknown route is a 404 problem', async () => {
      for (const path of ['/nope', '/api/orders/1/nope', '/api', '/api/orders/1/pay/extra']) {
        const res = await call(server.url, 'GET', path, { token });
        const body = expectProblem(res, 404, undefined, { ...SHAPE, instance: path });
        assert.match(String(body.type), /\/problems\/not-found$/);
      }
    });

    test('a known path with another method is 405 with Allow listing the methods it has', async () => {
      const collection = await call(server.url, 'DELETE', '/api/orders', { token });
      expectProblem(collection, 405, undefined, { ...SHAPE, instance: '/api/orders' });
      assert.equal(collection.headers.get('allow'), 'GET, HEAD, POST');
      const item = await call(server.url, 'POST', '/api/orders/1', { token, body: {} });
      expectProblem(item, 405, undefined, { ...SHAPE, instance: '/api/orders/1' });
      assert.equal(item.headers.get('allow'), 'GET, HEAD, PUT, PATCH, DELETE');
      const action = await call(server.url, 'GET', '/api/orders/1/pay', { token });
      expectProblem(action, 405, undefined, { ...SHAPE, instance: '/api/orders/1/pay' });
      assert.equal(action.headers.get('allow'), 'POST');
      const health = await call(server.url, 'POST', '/healthz');
      expectProblem(health, 405, undefined, { ...SHAPE, instance: '/healthz' });
      assert.equal(health.headers.get('allow'), 'GET, HEAD');
    });

    test('malformed JSON is 400', async () => {
      for (const raw of ['{', '{"CustomerId":', 'not json', '{"a":1}}', "{'a':1}"]) {
        const body = expectProblem(await post(raw), 400, undefined, { ...SHAPE, instance: '/api/orders' });
        assert.match(String(body.type), /\/problems\/malformed-body$/, raw);
      }
    });

    test('an empty body declared as JSON is 400', async () => {
      expectProblem(await post(''), 400, undefined, { ...SHAPE, instance: '/api/orders' });
      const noBody = await call(server.url, 'POST', '/api/orders', {
        token,
        headers: { 'content-type': 'application/json' },
      });
      expectProblem(noBody, 400, undefined, { ...SHAPE, instance: '/api/orders' });
    });

    test('a body that is not JSON by Content-Type is 415', async () => {
      const body = JSON.stringify({ CustomerId: CUSTOMER, Total: 1 });
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
        expectProblem(await post(body, contentType), 415, undefined, { ...SHAPE, instance: '/api/orders' });
      }
    });

    test('a body over BODY_LIMIT_BYTES is 413; one just under it is accepted', async () => {
      const padded = (size: number) => {
        const base = `{"CustomerId":"${CUSTOMER}","Total":1,"Currency":"USD"}`;
        return base.slice(0, -1) + ' '.repeat(size - base.length) + '}';
      };
      assert.equal(padded(1024).length, 1024);
      expectStatus(await post(padded(1024)), 201);
      expectProblem(await post(padded(1025)), 413, undefined, { ...SHAPE, instance: '/api/orders' });
      expectProblem(await post(padded(64 * 1024)), 413, undefined, { ...SHAPE, instance: '/api/orders' });
    });

    test('a body with a __proto__ or constructor.prototype member is 400', async () => {
      for (const raw of [
        `{"CustomerId":"${CUSTOMER}","Total":1,"__proto__":{"isAdmin":true}}`,
        `{"__proto__":{"Total":1},"CustomerId":"${CUSTOMER}","Total":1}`,
        `{"CustomerId":"${CUSTOMER}","Total":1,"constructor":{"prototype":{"isAdmin":true}}}`,
      ]) {
        expectProblem(await post(raw), 400, undefined, { ...SHAPE, instance: '/api/orders' });
      }
      const patch = await call(server.url, 'PATCH', '/api/orders/1', {
        token,
        rawBody: '{"__proto__":{"Total":1}}',
        contentType: 'application/merge-patch+json',
      });
      expectProblem(patch, 400, undefined, { ...SHAPE, instance: '/api/orders/1' });
    });

    test('unknown query parameters and bad fields/include values are 400', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      const item = `/api/orders/${created.json.Id}`;
      for (const path of [
        '/api/orders?nope=1',
        `${item}?nope=1`,
        '/api/orders?fields=Nope',
        `${item}?fields=Nope`,
        `${item}?fields=Id,Nope`,
        '/api/orders?include=nope',
        `${item}?include=nope`,
        '/api/orders?limit=0',
        '/api/orders?limit=abc',
      ]) {
        const body = expectProblem(await call(server.url, 'GET', path, { token }), 400, undefined, {
          ...SHAPE,
          instance: path,
        });
        assert.match(String(body.type), /\/problems\/(invalid-parameter|bad-request)$/, path);
      }
      expectStatus(await call(server.url, 'GET', `${item}?fields=Id,Total`, { token }), 200);
      expectStatus(await call(server.url, 'GET', `${item}?include=history`, { token }), 200);
    });

    test('authorization and validation errors share the same problem shape', async () => {
      expectProblem(await call(server.url, 'GET', '/api/orders'), 401, undefined, {
        ...SHAPE,
        instance: '/api/orders',
      });
      expectProblem(await call(server.url, 'GET', '/api/orders/999999', { token }), 404, undefined, {
        ...SHAPE,
        instance: '/api/orders/999999',
      });
      expectProblem(await call(server.url, 'GET', '/api/orders/abc', { token }), 400, undefined, {
        ...SHAPE,
        instance: '/api/orders/abc',
      });
      const invalid = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: 'x', Total: 'y' } });
      const body = expectProblem(invalid, 422, undefined, { ...SHAPE, instance: '/api/orders' });
      assert.ok(Array.isArray(body.errors));
    });

    test('the request id is generated, not taken from an untrusted peer', async () => {
      const res = await call(server.url, 'GET', '/api/orders/999999?x', {
        token,
        headers: { 'x-request-id': 'client-chosen-id' },
      });
      assert.notEqual(res.headers.get('x-request-id'), 'client-chosen-id');
      assert.match(res.headers.get('x-request-id') ?? '', UUID);
      assert.equal(res.json.requestId, res.headers.get('x-request-id'));
      const ok = await call(server.url, 'GET', '/healthz', { headers: { 'x-request-id': 'client-chosen-id' } });
      assert.match(ok.headers.get('x-request-id') ?? '', UUID, 'successful responses carry an id too');
    });
  });

  describe(`request id from a trusted proxy [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => {
      server = await startServer(dialect, { TRUST_PROXY: '127.0.0.1' });
      token = await server.issuer.clientToken('orders:read');
    });
    after(() => server.close());

    test('X-Request-Id from a trusted peer is echoed in the header and in problem bodies', async () => {
      const res = await call(server.url, 'GET', '/api/orders/999999', {
        token,
        headers: { 'x-request-id': 'proxy-id-42' },
      });
      expectProblem(res, 404, undefined, { ...SHAPE, instance: '/api/orders/999999' });
      assert.equal(res.headers.get('x-request-id'), 'proxy-id-42');
      assert.equal(res.json.requestId, 'proxy-id-42');
      const ok = await call(server.url, 'GET', '/api/orders', { token, headers: { 'x-request-id': 'proxy-id-43' } });
      expectStatus(ok, 200);
      assert.equal(ok.headers.get('x-request-id'), 'proxy-id-43');
    });

    test('a malformed X-Request-Id is replaced even from a trusted peer', async () => {
      for (const bad of ['x'.repeat(129), 'has space', 'tab\there']) {
        const res = await call(server.url, 'GET', '/api/orders/999999', { token, headers: { 'x-request-id': bad } });
        assert.match(res.headers.get('x-request-id') ?? '', UUID, JSON.stringify(bad));
        assert.equal(res.json.requestId, res.headers.get('x-request-id'));
      }
    });
  });

  describe(`problem instance [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(
      async () =>
        ({ server, token } = await startWithClientToken(dialect, { PUBLIC_URL: 'https://public.example.org' })),
    );
    after(() => server.close());

    test('is absolute on the same base as the links, whatever the request target says', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      assert.equal(created.json._links.self.href, `https://public.example.org/api/orders/${created.json.Id}`);
      const missing = await call(server.url, 'GET', '/api/orders/999999?fields=Id', { token });
      assert.equal(missing.json.instance, 'https://public.example.org/api/orders/999999');
      assert.equal(missing.json.type, 'https://public.example.org/problems/not-found');
      // Absolute-form target (RFC 9112 §3.2.2): its authority is the client's, never echoed.
      const port = Number(new URL(server.url).port);
      const res = await rawRequest(
        port,
        `GET http://evil.example/api/orders/999999 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      );
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.instance, 'https://public.example.org/api/orders/999999');
    });
  });

  describe(`server faults [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    test('with the database handle gone, the API answers a generic 5xx problem without internals', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      expectStatus(created, 201);
      await server.app.database.db.destroy();
      const requests: Array<[string, string, Parameters<typeof call>[3]]> = [
        ['GET', `/api/orders/${created.json.Id}`, { token }],
        ['GET', '/api/orders', { token }],
        ['POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 2 } }],
        [
          'POST',
          '/api/orders',
          { token, body: { CustomerId: CUSTOMER, Total: 2 }, headers: { 'idempotency-key': 'k-1' } },
        ],
      ];
      for (const [method, path, options] of requests) {
        const res = await call(server.url, method, path, options);
        assert.ok(res.status === 500 || res.status === 503, `${method} ${path}: ${res.status} ${res.text}`);
        const body = expectProblem(res, res.status, undefined, { ...SHAPE, instance: path });
        assert.deepEqual(Object.keys(body).sort(), ['detail', 'instance', 'requestId', 'status', 'title', 'type']);
        assert.doesNotMatch(
          res.text,
          /select|insert|from "|driver|destroy|kysely|pool|sqlite|postgres|\bat .*\.ts|node_modules|Error:/i,
          `${method} ${path} leaks: ${res.text}`,
        );
      }
    });
  });
}
