// CORS (Fetch standard): only the configured browser origins may call the API; preflights allow the
// methods and request headers the API uses, and responses expose the headers clients need to read.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

const APP = 'https://app.example';
const EVIL = 'https://evil.example';

function list(res: CallResult, header: string): string[] {
  return (res.headers.get(header) ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

function assertIncludes(actual: string[], expected: string[], what: string): void {
  for (const item of expected)
    assert.ok(actual.includes(item.toLowerCase()), `${what} lacks ${item}: ${actual.join(', ')}`);
}

const preflight = (url: string, path: string, origin: string, method: string, headers: string) =>
  call(url, 'OPTIONS', path, {
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

for (const dialect of testDialects()) {
  describe(`CORS for configured origins [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect, { CORS_ORIGINS: APP })));
    after(() => server.close());

    test('a preflight from the allowed origin for PATCH with Authorization, If-Match and Idempotency-Key succeeds', async () => {
      const res = await preflight(
        server.url,
        '/api/orders/1',
        APP,
        'PATCH',
        'authorization,if-match,idempotency-key,content-type',
      );
      assert.ok(res.status === 204 || res.status === 200, `${res.status} ${res.text}`);
      assert.equal(res.headers.get('access-control-allow-origin'), APP);
      assertIncludes(
        list(res, 'access-control-allow-methods'),
        ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
        'Allow-Methods',
      );
      assertIncludes(
        list(res, 'access-control-allow-headers'),
        ['Authorization', 'If-Match', 'Idempotency-Key', 'Content-Type', 'If-None-Match', 'X-Request-Id'],
        'Allow-Headers',
      );
      assert.equal(res.headers.get('access-control-max-age'), '600');
      assert.equal(
        res.headers.get('access-control-allow-credentials'),
        null,
        'bearer tokens, not cookies: no credentials mode',
      );
      assertIncludes(list(res, 'vary'), ['Origin'], 'Vary');
    });

    test('a preflight needs no token and works for the collection and the actions', async () => {
      for (const [path, method] of [
        ['/api/orders', 'POST'],
        ['/api/orders/1/pay', 'POST'],
        ['/api/orders/1', 'DELETE'],
      ] as const) {
        const res = await preflight(server.url, path, APP, method, 'authorization,content-type,idempotency-key');
        assert.ok(res.status === 204 || res.status === 200, `${path}: ${res.status} ${res.text}`);
        assert.equal(res.headers.get('access-control-allow-origin'), APP, path);
      }
    });

    test('responses to the allowed origin expose ETag, Location, Link, Idempotent-Replayed and the other API headers', async () => {
      const expected = [
        'ETag',
        'Location',
        'Link',
        'Last-Modified',
        'Retry-After',
        'RateLimit',
        'RateLimit-Policy',
        'Idempotent-Replayed',
        'X-Request-Id',
        'WWW-Authenticate',
      ];
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
        headers: { origin: APP, 'idempotency-key': `cors-${Date.now()}` },
      });
      expectStatus(created, 201);
      assert.equal(created.headers.get('access-control-allow-origin'), APP);
      assertIncludes(list(created, 'access-control-expose-headers'), expected, 'Expose-Headers');
      const got = await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token, headers: { origin: APP } });
      expectStatus(got, 200);
      assert.equal(got.headers.get('access-control-allow-origin'), APP);
      assertIncludes(list(got, 'access-control-expose-headers'), expected, 'Expose-Headers');
      assertIncludes(list(got, 'vary'), ['Origin'], 'Vary');
    });

    test('error responses carry CORS headers too, so a browser can read the problem', async () => {
      const res = await call(server.url, 'GET', '/api/orders', { headers: { origin: APP } });
      expectStatus(res, 401);
      assert.equal(res.headers.get('access-control-allow-origin'), APP);
      assertIncludes(
        list(res, 'access-control-expose-headers'),
        ['WWW-Authenticate', 'X-Request-Id'],
        'Expose-Headers',
      );
    });

    test('another origin gets no Access-Control-Allow-Origin, for preflights or requests', async () => {
      for (const origin of [EVIL, 'http://app.example', 'https://app.example.evil.test', 'null']) {
        const pre = await preflight(server.url, '/api/orders/1', origin, 'PATCH', 'authorization,if-match');
        assert.equal(pre.headers.get('access-control-allow-origin'), null, `preflight from ${origin}`);
        const res = await call(server.url, 'GET', '/api/orders', { token, headers: { origin } });
        expectStatus(res, 200);
        assert.equal(res.headers.get('access-control-allow-origin'), null, `GET from ${origin}`);
      }
    });
  });

  describe(`CORS without configured origins [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect);
    });
    after(() => server.close());

    test('no origin is allowed when CORS_ORIGINS is empty', async () => {
      const pre = await preflight(server.url, '/api/orders', APP, 'POST', 'authorization');
      assert.equal(pre.headers.get('access-control-allow-origin'), null);
      const token = await server.issuer.clientToken('orders:read');
      const res = await call(server.url, 'GET', '/api/orders', { token, headers: { origin: APP } });
      expectStatus(res, 200);
      assert.equal(res.headers.get('access-control-allow-origin'), null);
    });
  });
}
