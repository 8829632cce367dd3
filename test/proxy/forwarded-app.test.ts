// RFC 7239 Forwarded and X-Forwarded-* over real HTTP, without nginx: the app honours them from a
// trusted proxy (including the port: X-Forwarded-Port or a port in the forwarded host) in every
// absolute URL it builds, ignores them from anyone else, and PUBLIC_URL pins absolute URLs whatever
// the request says. The OAuth/OIDC metadata follows the configured issuer and resource, never a request.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectStatus } from '../helpers/expect.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { tokenRequest } from '../helpers/oauth-requests.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { rawRequest } from '../http/raw-http.ts';
import { LOCAL_WEBHOOKS_ENV, waitUntil, WEBHOOK_SCOPES } from '../helpers/webhook-receiver.ts';

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

/** What nginx on :8080 sends with `X-Forwarded-Host $host; X-Forwarded-Port $server_port; X-Forwarded-Proto $scheme`. */
const NGINX_ON_8080 = {
  'x-forwarded-for': '198.51.100.7',
  'x-forwarded-host': 'api.example.com',
  'x-forwarded-port': '8080',
  'x-forwarded-proto': 'http',
};
const PUBLIC_8080 = 'http://api.example.com:8080';

/** Every `href` anywhere in a JSON document. */
function hrefs(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(hrefs);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, member]) =>
    key === 'href' && typeof member === 'string' ? [member] : hrefs(member),
  );
}

function assertAllUnder(base: string, res: CallResult): void {
  const links = hrefs(res.json);
  assert.ok(links.length > 0, `no links in ${res.text}`);
  for (const href of links) assert.ok(href.startsWith(`${base}/`), `${href} is not under ${base}: ${res.text}`);
}

for (const dialect of testDialects()) {
  describe(`X-Forwarded-Port from a trusted proxy (TRUST_PROXY=127.0.0.1) [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => {
      server = await startServer(dialect, { TRUST_PROXY: '127.0.0.1', ...LOCAL_WEBHOOKS_ENV });
      token = await server.issuer.clientToken(WEBHOOK_SCOPES);
    });
    after(() => server.close());

    const proxied = (
      method: string,
      path: string,
      options: { body?: unknown; headers?: Record<string, string> } = {},
    ) => call(server.url, method, path, { token, ...options, headers: { ...NGINX_ON_8080, ...options.headers } });
    const createOrder = async (headers: Record<string, string> = {}) => {
      const res = await proxied('POST', '/api/orders', { body: { CustomerId: CUSTOMER, Total: 3 }, headers });
      expectStatus(res, 201);
      return res;
    };

    test('Location and every _links href of an order carry the forwarded port', async () => {
      const res = await createOrder();
      assert.equal(res.headers.get('location'), `${PUBLIC_8080}/api/orders/${res.json.Id}`, res.text);
      assertAllUnder(PUBLIC_8080, res);
      const read = await proxied('GET', `/api/orders/${res.json.Id}`);
      expectStatus(read, 200);
      assertAllUnder(PUBLIC_8080, read);
    });

    test('list links and the Link header carry the forwarded port', async () => {
      await createOrder();
      await createOrder();
      const list = await proxied('GET', `/api/orders?limit=1&CustomerId=${CUSTOMER}`);
      expectStatus(list, 200);
      assert.ok(list.json._links.next.href.startsWith(`${PUBLIC_8080}/api/orders?`), list.text);
      assertAllUnder(PUBLIC_8080, list);
      assert.equal(list.headers.get('link'), `<${list.json._links.next.href}>; rel="next"`);
    });

    test('problem type and instance carry the forwarded port', async () => {
      const missing = await proxied('GET', '/api/orders/999999');
      expectStatus(missing, 404);
      assert.equal(missing.json.type, `${PUBLIC_8080}/problems/not-found`, missing.text);
      assert.equal(missing.json.instance, `${PUBLIC_8080}/api/orders/999999`, missing.text);
    });

    test('webhook endpoints: Location, _links and the list carry the forwarded port', async () => {
      const created = await proxied('POST', '/api/webhooks', {
        body: { Url: 'http://127.0.0.1:9/hook', Events: ['webhook.ping'] },
      });
      expectStatus(created, 201);
      assert.equal(created.headers.get('location'), `${PUBLIC_8080}/api/webhooks/${created.json.Id}`, created.text);
      assertAllUnder(PUBLIC_8080, created);
      const list = await proxied('GET', '/api/webhooks');
      expectStatus(list, 200);
      assertAllUnder(PUBLIC_8080, list);
    });

    test('event Data links carry the port of the request that made the change, written with it in its transaction', async () => {
      const created = await createOrder();
      const id = created.json.Id as number;
      let event: { Data: { Id?: number; _links?: unknown }; _links: unknown } | undefined;
      await waitUntil(
        async () => {
          // Read without forwarding headers: Data was fixed when the event was written; the event's own
          // _links follow this reading request.
          const page = await call(server.url, 'GET', '/api/events?type=order.created&limit=100', { token });
          event = (page.json?.Items ?? []).find((e: { Data: { Id?: number } }) => e.Data.Id === id);
          return event !== undefined;
        },
        10_000,
        () => `no order.created event for order ${id}`,
      );
      assert.deepEqual(event!.Data._links, created.json._links, 'Data links as the response to the change');
      for (const href of hrefs(event!.Data)) assert.ok(href.startsWith(`${PUBLIC_8080}/`), href);
      for (const href of hrefs(event!._links)) assert.ok(href.startsWith(`${server.url}/`), href);
    });

    test('the port inside X-Forwarded-Host wins over X-Forwarded-Port', async () => {
      const res = await createOrder({ 'x-forwarded-host': 'api.example.com:9443' });
      assert.equal(res.headers.get('location'), `http://api.example.com:9443/api/orders/${res.json.Id}`);
    });

    test("the scheme's default port is omitted", async () => {
      const https = await createOrder({ 'x-forwarded-proto': 'https', 'x-forwarded-port': '443' });
      assert.equal(https.headers.get('location'), `https://api.example.com/api/orders/${https.json.Id}`);
      const http = await createOrder({ 'x-forwarded-port': '80' });
      assert.equal(http.headers.get('location'), `http://api.example.com/api/orders/${http.json.Id}`);
      const forwarded = await createOrder({ forwarded: 'for=198.51.100.7;proto=https;host="api.example.com:443"' });
      assert.equal(forwarded.headers.get('location'), `https://api.example.com/api/orders/${forwarded.json.Id}`);
    });

    test('a port in the Forwarded host is used (RFC 7239 has no port parameter)', async () => {
      const res = await createOrder({ forwarded: 'for=198.51.100.7;proto=https;host="api.example.com:8443"' });
      assert.equal(res.headers.get('location'), `https://api.example.com:8443/api/orders/${res.json.Id}`);
      assertAllUnder('https://api.example.com:8443', res);
    });

    test('an invalid X-Forwarded-Port is refused like an invalid forwarded host: the Host header is used', async () => {
      for (const port of ['0', '65536', '80a', '-1']) {
        const res = await createOrder({ 'x-forwarded-port': port });
        assert.equal(res.headers.get('location'), `${server.url}/api/orders/${res.json.Id}`, port);
      }
    });
  });
}

describe('X-Forwarded-Port from an untrusted peer (TRUST_PROXY unset)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('sqlite');
  });
  after(() => server.close());

  test('is ignored: absolute URLs use the Host header', async () => {
    const { location } = await createWith(server, NGINX_ON_8080);
    assert.equal(location, `${server.url}${orderPath(location)}`);
  });
});

describe('event links when the caller is no trusted proxy (TRUST_PROXY unset)', () => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await startServer('sqlite', LOCAL_WEBHOOKS_ENV);
    token = await server.issuer.clientToken(`orders:write ${WEBHOOK_SCOPES}`);
  });
  after(() => server.close());

  test('a Host the caller chose never reaches the signed event Data: its links use the address it reached', async () => {
    // fetch cannot send a Host of its own: the request is written by hand.
    const body = JSON.stringify({ CustomerId: CUSTOMER, Total: 5 });
    const created = await rawRequest(
      Number(new URL(server.url).port),
      'POST /api/orders HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n' +
        `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expectStatus(created, 201);
    // The caller's own response follows its Host (it only misleads itself) ...
    assert.equal(created.headers.location, `http://evil.example/api/orders/${created.json.Id}`);
    let data: { Id?: number } | undefined;
    await waitUntil(
      async () => {
        const page = await call(server.url, 'GET', '/api/events?type=order.created&limit=100', { token });
        data = (page.json?.Items ?? []).find((e: { Data: { Id?: number } }) => e.Data.Id === created.json.Id)?.Data;
        return data !== undefined;
      },
      10_000,
      () => `no order.created event for order ${created.json.Id}`,
    );
    // ... but what every subscriber receives, signed, does not.
    for (const href of hrefs(data)) assert.ok(href.startsWith(`${server.url}/`), href);
  });
});

describe('PUBLIC_URL with a trusted proxy sending X-Forwarded-Port', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('sqlite', { PUBLIC_URL: 'https://public.example.org', TRUST_PROXY: '127.0.0.1' });
  });
  after(() => server.close());

  test('pins Location and links: the forwarded port is not used', async () => {
    const { location } = await createWith(server, NGINX_ON_8080);
    assert.equal(location, `https://public.example.org${orderPath(location)}`);
  });
});

for (const dialect of testDialects()) {
  describe(`OAuth/OIDC metadata behind a trusted proxy follows the configured issuer [${dialect}]`, () => {
    let server: AuthTestServer;
    before(async () => {
      server = await startAuthServer(dialect, { TRUST_PROXY: '127.0.0.1' });
    });
    after(() => server.close());

    const forwardedGet = (path: string, headers: Record<string, string> = NGINX_ON_8080) =>
      call(server.url, 'GET', path, { headers });

    test('discovery and authorization server metadata name the configured issuer whatever the forwarded port (OIDC Discovery §4.3)', async () => {
      for (const path of ['/oauth/.well-known/openid-configuration', '/.well-known/oauth-authorization-server/oauth']) {
        for (const headers of [
          NGINX_ON_8080,
          { forwarded: 'for=198.51.100.7;proto=https;host="api.example.com:8443"' },
        ]) {
          const res = await forwardedGet(path, headers);
          expectStatus(res, 200);
          assert.equal(res.json.issuer, server.issuer, res.text);
          for (const [name, value] of Object.entries(res.json as Record<string, unknown>)) {
            if (typeof value === 'string' && /^https?:/.test(value))
              assert.ok(value.startsWith(`${server.issuer}/`) || value === server.issuer, `${name}: ${value}`);
          }
        }
      }
    });

    test('protected resource metadata names the configured resource and issuer (RFC 9728 §3.3)', async () => {
      for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api']) {
        const res = await forwardedGet(path);
        expectStatus(res, 200);
        assert.equal(res.json.resource, server.resource, res.text);
        assert.deepEqual(res.json.authorization_servers, [server.issuer], res.text);
      }
      const unauthorized = await forwardedGet('/api/orders');
      expectStatus(unauthorized, 401);
      assert.match(
        unauthorized.headers.get('www-authenticate') ?? '',
        new RegExp(
          `resource_metadata="${server.url.replaceAll('.', '\\.')}/\\.well-known/oauth-protected-resource/api"`,
        ),
      );
    });

    test('while API links through the same proxy follow the request, port included', async () => {
      const client = await server.createClient();
      const issued = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: 'orders:write', resource: server.resource },
        { basic: [client.clientId, client.clientSecret!] },
      );
      assert.equal(issued.status, 200, JSON.stringify(issued.body));
      const res = await call(server.url, 'POST', '/api/orders', {
        token: String(issued.body.access_token),
        body: { CustomerId: CUSTOMER, Total: 1 },
        headers: NGINX_ON_8080,
      });
      expectStatus(res, 201);
      assert.equal(res.headers.get('location'), `${PUBLIC_8080}/api/orders/${res.json.Id}`);
    });
  });
}
