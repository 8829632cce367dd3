// The per-request work folded into one hook per stage (src/http/admission/request-pipeline.ts) and the per-route
// guard (src/http/bearer/route-guard.ts): every response still carries the request id, the security headers
// and, on rate-limited routes, one RateLimit pair; a GET and its HEAD count once each; the cached-token
// fast path accepts exactly the Bearer grammar it accepted before; the in-memory counter keeps a fixed
// window per caller and forgets the least recently seen caller first.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, mock, test } from 'node:test';
import { localStore, type Count, type Store } from '../../src/http/rate-limit/rate-limit-store.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { RawConnection, rawRequest } from './raw-http.ts';

const MAX = 5;
/** The headers helmet's policy gives a JSON response (src/http/admission/security-headers.ts). */
const API_SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'DENY',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

function remainingOf(res: CallResult): number {
  const what = `${res.status} ${res.text} RateLimit: ${res.headers.get('ratelimit')}`;
  assert.equal(res.headers.get('ratelimit-policy'), `"default";q=${MAX};w=60`, what);
  const match = /^"default";r=(\d+);t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '');
  assert.ok(match, what);
  return Number(match[1]);
}

function assertCommonHeaders(res: CallResult, what: string): void {
  const shown = `${what}: ${res.status} ${JSON.stringify(Object.fromEntries(res.headers))}`;
  for (const [name, value] of Object.entries(API_SECURITY_HEADERS)) assert.equal(res.headers.get(name), value, shown);
  assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, shown);
}

for (const dialect of testDialects()) {
  describe(`the shared request pipeline [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect, { RATE_LIMIT_MAX: String(MAX) });
    });
    after(() => server.close());

    test('200, 304, 401, 404 and 429 all carry the request id and the security headers', async () => {
      const token = await server.issuer.clientToken('orders:read orders:write', `pipeline-${randomUUID()}`);
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: randomUUID(), Total: 5, Currency: 'EUR' },
      });
      assert.equal(created.status, 201, created.text);
      const path = `/api/orders/${created.json.Id}`;
      const read = await call(server.url, 'GET', path, { token });
      assert.equal(read.status, 200, read.text);
      const etag = read.headers.get('etag') ?? '';
      const notModified = await call(server.url, 'GET', path, { token, headers: { 'if-none-match': etag } });
      assert.equal(notModified.status, 304, notModified.text);
      const anonymous = await call(server.url, 'GET', path);
      assert.equal(anonymous.status, 401, anonymous.text);
      const unknown = await call(server.url, 'GET', `/nothing-here-${randomUUID()}`);
      assert.equal(unknown.status, 404, unknown.text);
      for (const [what, res] of Object.entries({ read, notModified, anonymous, unknown }))
        assertCommonHeaders(res, what);
      assert.deepEqual([read, notModified].map(remainingOf), [MAX - 2, MAX - 3], 'the POST counted first');
      assert.equal(unknown.headers.get('ratelimit'), null, 'no route, no rate limit (as before)');
      let refused: CallResult | undefined;
      for (let i = 0; i < MAX && !refused; i++) {
        const res = await call(server.url, 'GET', path, { token });
        if (res.status === 429) refused = res;
      }
      assert.ok(refused, `no 429 within ${MAX} more requests`);
      assertCommonHeaders(refused, '429');
      assert.equal(remainingOf(refused), 0);
      assert.match(refused.json.detail, /^limit of 5 requests per 60 s reached; retry in \d+ s$/, refused.text);
      assert.equal(refused.headers.get('retry-after'), /t=(\d+)$/.exec(refused.headers.get('ratelimit')!)![1]);
    });

    test('a GET and a HEAD of the same route count one request each', async () => {
      const token = await server.issuer.clientToken('orders:read', `head-${randomUUID()}`);
      const seen: number[] = [];
      for (const method of ['GET', 'HEAD', 'GET', 'HEAD']) {
        const res = await call(server.url, method, '/api/orders', { token });
        assert.equal(res.status, 200, `${method}: ${res.text}`);
        seen.push(remainingOf(res));
      }
      assert.deepEqual(seen, [4, 3, 2, 1]);
    });

    test('a cached token is accepted under every spelling of the Bearer scheme the grammar allows, and only those', async () => {
      const port = Number(new URL(server.url).port);
      const token = await server.issuer.clientToken('orders:read', `spelling-${randomUUID()}`);
      const request = (authorization: string) =>
        rawRequest(port, `GET /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\n\r\n`);
      const first = await request(`Bearer ${token}`); // verified, then cached
      assert.equal(first.status, 200, first.body);
      for (const spelling of [`bearer ${token}`, `BEARER   ${token}`, `Bearer ${token}  `]) {
        const res = await request(spelling);
        assert.equal(res.status, 200, `${JSON.stringify(spelling.slice(0, 12))}…: ${res.body}`);
      }
      for (const spelling of [`Bearer ${token}!`, `Bearer ${token} x`, `Bearer\t${token}`]) {
        const res = await request(spelling);
        assert.ok([400, 401].includes(res.status), `${JSON.stringify(spelling.slice(-4))}: ${res.status} ${res.body}`);
        assert.match(res.headers['www-authenticate'] ?? '', /^Bearer realm="signet"/, res.body);
      }
    });
  });
}

/** Three 404s on one keep-alive connection; the base URL each problem's `type` was built on. */
async function basesOnOneConnection(port: number, headerLines: string[]): Promise<string[]> {
  const connection = await RawConnection.open(port);
  try {
    for (const lines of headerLines) connection.write(`GET /nothing-here HTTP/1.1\r\n${lines}\r\n\r\n`);
    const responses = await connection.responses(headerLines.length);
    return responses.map((res) => {
      assert.equal(res.status, 404, res.body);
      return String(res.json.type).replace(/\/problems\/.*$/, '');
    });
  } finally {
    connection.destroy();
  }
}

describe('the client origin, kept per connection', () => {
  test('a direct client changing its Host on one connection gets links on each Host', async () => {
    const server = await startServer('sqlite');
    try {
      const port = Number(new URL(server.url).port);
      const bases = await basesOnOneConnection(port, ['Host: a.example', 'Host: b.example:8080', 'Host: a.example']);
      assert.deepEqual(bases, ['http://a.example', 'http://b.example:8080', 'http://a.example']);
    } finally {
      await server.close();
    }
  });

  test("a trusted proxy's requests on one connection are resolved one by one (each is another client's)", async () => {
    const server = await startServer('sqlite', { TRUST_PROXY: '127.0.0.1' });
    try {
      const port = Number(new URL(server.url).port);
      const bases = await basesOnOneConnection(port, [
        'Host: internal\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: shop.example',
        'Host: internal\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: other.example',
        'Host: internal',
      ]);
      assert.deepEqual(bases, ['https://shop.example', 'https://other.example', 'http://internal']);
    } finally {
      await server.close();
    }
  });
});

describe('the in-memory rate-limit counter', () => {
  /** The count `store` gives `key` at time `now` (the store reads the clock itself; mocked here). */
  function hitAt(store: Store, key: string, now: number): Count & { iterationStartMs?: number } {
    mock.timers.enable({ apis: ['Date'], now });
    try {
      let count: Count | undefined;
      store.incr(key, (_err, result) => (count = result), 60_000, 100);
      assert.ok(count, 'the local store answers synchronously');
      return { ...count };
    } finally {
      mock.timers.reset();
    }
  }

  test('counts a fixed window per key and starts a new one when it has passed', () => {
    const counter = localStore();
    const t0 = 1_000_000;
    assert.deepEqual(hitAt(counter, 'a', t0), { current: 1, ttl: 60_000, iterationStartMs: t0 });
    assert.deepEqual(hitAt(counter, 'a', t0 + 1500), { current: 2, ttl: 58_500, iterationStartMs: t0 });
    assert.equal(hitAt(counter, 'b', t0 + 1500).current, 1, 'another key, another count');
    assert.deepEqual(hitAt(counter, 'a', t0 + 60_000), { current: 1, ttl: 60_000, iterationStartMs: t0 + 60_000 });
  });

  test('when full, forgets the caller seen least recently, never the one just counted', () => {
    const counter = localStore(2);
    const t0 = 1_000_000;
    hitAt(counter, 'old', t0);
    hitAt(counter, 'busy', t0);
    hitAt(counter, 'old', t0 + 1); // now 'busy' is the least recently seen
    hitAt(counter, 'new', t0 + 2);
    assert.equal(hitAt(counter, 'old', t0 + 3).current, 3, 'kept');
    assert.equal(hitAt(counter, 'busy', t0 + 4).current, 1, 'forgotten, counted anew');
  });
});
