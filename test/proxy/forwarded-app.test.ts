// RFC 7239 Forwarded over real HTTP, without nginx: the app honours it from a trusted proxy, ignores it
// from anyone else, and PUBLIC_URL pins absolute URLs whatever the request says.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

/** Creates an order with the given request headers and returns its Location and self link. */
async function createWith(
  server: TestServer,
  headers: Record<string, string>,
): Promise<{ location: string | null; self: string }> {
  const token = await server.issuer.clientToken('orders:read orders:write');
  const res = await call(server.url, 'POST', '/api/orders', {
    token,
    body: { CustomerId: CUSTOMER, Total: 1 },
    headers,
  });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.json._links.self.href, res.headers.get('location'), 'Location and self link agree');
  return { location: res.headers.get('location'), self: res.json._links.self.href };
}

function orderPath(location: string | null): string {
  return new URL(location ?? '').pathname;
}

describe('Forwarded from a trusted proxy (TRUST_PROXY=127.0.0.1)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('sqlite', { TRUST_PROXY: '127.0.0.1' });
  });
  after(() => server.close());

  test('builds absolute URLs from the proto and host of the Forwarded element', async () => {
    const { location } = await createWith(server, { forwarded: 'for=198.51.100.7;proto=https;host=api.example.com' });
    assert.equal(location, `https://api.example.com${orderPath(location)}`);
    assert.match(orderPath(location), /^\/api\/orders\/\d+$/);
  });

  test('accepts quoted IPv6 node identifiers, a quoted host with a port and any parameter-name case', async () => {
    const quoted = await createWith(server, {
      forwarded: 'for="[2001:db8::7]:4711";proto=https;host="api.example.com:8443"',
    });
    assert.equal(quoted.location, `https://api.example.com:8443${orderPath(quoted.location)}`);
    const mixedCase = await createWith(server, { forwarded: 'For=198.51.100.7;Proto=HTTPS;Host=API.Example.COM' });
    assert.equal(mixedCase.location, `https://api.example.com${orderPath(mixedCase.location)}`);
  });

  test('is preferred over X-Forwarded-* when both are present', async () => {
    const { location } = await createWith(server, {
      forwarded: 'for=198.51.100.7;proto=https;host=api.example.com',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'xfh.example',
    });
    assert.equal(location, `https://api.example.com${orderPath(location)}`);
  });

  test('ignores elements added before the first untrusted hop', async () => {
    const { location } = await createWith(server, {
      forwarded: 'for=192.0.2.66;proto=http;host=evil.example, for=198.51.100.7;proto=https;host=api.example.com',
    });
    assert.equal(location, `https://api.example.com${orderPath(location)}`);
  });

  test('treats a malformed Forwarded header as absent and falls back to X-Forwarded-*', async () => {
    const { location } = await createWith(server, {
      forwarded: 'for="unterminated;host=evil.example',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'xfh.example',
    });
    assert.equal(location, `https://xfh.example${orderPath(location)}`);
  });

  test('rejects a Forwarded host that is not a plain authority and keeps the Host header', async () => {
    const { location } = await createWith(server, {
      forwarded: 'for=198.51.100.7;proto=https;host="evil.example/path"',
    });
    assert.equal(location, `https://${new URL(server.url).host}${orderPath(location)}`);
  });
});

describe('Forwarded from an untrusted peer (TRUST_PROXY unset)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('sqlite');
  });
  after(() => server.close());

  test('ignores Forwarded: absolute URLs use the Host header and the plain-HTTP scheme', async () => {
    const { location } = await createWith(server, { forwarded: 'for=198.51.100.7;proto=https;host=api.example.com' });
    assert.equal(location, `${server.url}${orderPath(location)}`);
  });
});

describe('PUBLIC_URL', () => {
  const publicUrl = 'https://public.example.org';

  for (const trustProxy of ['127.0.0.1', undefined]) {
    describe(`with TRUST_PROXY ${trustProxy ?? 'unset'}`, () => {
      let server: TestServer;
      before(async () => {
        server = await startServer('sqlite', {
          PUBLIC_URL: publicUrl,
          ...(trustProxy ? { TRUST_PROXY: trustProxy } : {}),
        });
      });
      after(() => server.close());

      test('overrides both the Forwarded header and the Host header', async () => {
        const forwarded = await createWith(server, {
          forwarded: 'for=198.51.100.7;proto=http;host=api.example.com',
          'x-forwarded-host': 'xfh.example',
        });
        assert.equal(forwarded.location, `${publicUrl}${orderPath(forwarded.location)}`);
        const plain = await createWith(server, {});
        assert.equal(plain.location, `${publicUrl}${orderPath(plain.location)}`);
      });
    });
  }
});
