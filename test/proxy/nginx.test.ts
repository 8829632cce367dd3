// Signet behind a real nginx running deploy/nginx/signet.conf: absolute URLs follow nginx's public
// scheme, host and port (also when the port comes on its own in X-Forwarded-Port); conditional
// requests and ETags pass through untouched; request ids flow end to end; and forwarding headers are
// believed only from the trusted proxy, never from clients.
// Runs when an nginx binary exists; with TEST_NGINX_REQUIRED=1 a missing nginx fails the suite.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { waitUntil, withDeadline } from '../helpers/deadline.ts';
import { call, CALL_TIMEOUT_MS, CUSTOMER } from '../helpers/http.ts';
import { findNginx, PUBLIC_NAME, startNginx, type RunningNginx } from '../helpers/nginx.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';
import { testDialects } from '../helpers/databases.ts';

interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

interface ProxiedRequest {
  scheme: 'http' | 'https';
  port: number;
  /** Host header (and TLS server name); defaults to nginx's server_name with the port. */
  host?: string;
  ca?: string;
  headers?: Record<string, string>;
  body?: unknown;
  contentType?: string;
}

/**
 * node:http rather than fetch: the Host header and TLS server name must name the public host, not 127.0.0.1.
 * A request without a complete answer within CALL_TIMEOUT_MS is destroyed and fails with what came so far.
 */
async function send(method: string, path: string, options: ProxiedRequest): Promise<Response> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    host: options.host ?? `${PUBLIC_NAME}:${options.port}`,
    ...options.headers,
  };
  if (payload !== undefined) {
    headers['content-type'] = options.contentType ?? 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  const common = { host: '127.0.0.1', port: options.port, method, path, headers, agent: false as const };
  const req: ClientRequest =
    options.scheme === 'https'
      ? httpsRequest({ ...common, servername: headers.host!.replace(/:\d+$/, ''), ca: options.ca })
      : httpRequest(common);
  let status: number | undefined;
  const chunks: Buffer[] = [];
  const answered = new Promise<Response>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode;
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
  });
  req.end(payload);
  try {
    return await withDeadline(answered, CALL_TIMEOUT_MS, () => {
      const seen = status === undefined ? 'no response yet' : `status ${status}, body so far: ${Buffer.concat(chunks)}`;
      return `${method} ${options.scheme}://${headers.host}${path} via nginx on port ${options.port}: ${seen}`;
    });
  } finally {
    req.destroy(); // ends a request still waiting; a no-op for one whose response has ended
  }
}

const nginxBinary = findNginx();

if (nginxBinary) {
  describe('Signet behind nginx (deploy/nginx/signet.conf)', () => {
    let server: TestServer;
    let nginx: RunningNginx;
    let token: string;
    before(async () => {
      server = await startServer('sqlite', { TRUST_PROXY: '127.0.0.1' });
      token = await server.issuer.clientToken('orders:read orders:write');
      nginx = await startNginx(nginxBinary, Number(new URL(server.url).port));
    });
    after(async () => {
      await nginx?.stop();
      await server?.close();
    });

    const https = (method: string, path: string, options: Omit<ProxiedRequest, 'scheme' | 'port' | 'ca'> = {}) =>
      send(method, path, {
        scheme: 'https',
        port: nginx.httpsPort,
        ca: nginx.ca,
        ...options,
        headers: { authorization: `Bearer ${token}`, ...options.headers },
      });
    const publicBase = () => `https://${PUBLIC_NAME}:${nginx.httpsPort}`;
    const createOrder = () =>
      https('POST', '/api/orders', { body: { CustomerId: CUSTOMER, Total: 12.5, Currency: 'EUR' } });

    test('POST /api/orders through nginx answers with a Location and _links on the https host and port the client used', async () => {
      const res = await createOrder();
      assert.equal(res.status, 201, res.text);
      const self = `${publicBase()}/api/orders/${res.json.Id}`;
      assert.equal(res.headers.location, self);
      assert.deepEqual(res.json._links.self, { href: self, method: 'GET' });
      assert.deepEqual(res.json._links.pay, { href: `${self}/pay`, method: 'POST' });
      for (const link of Object.values(res.json._links) as { href: string }[])
        assert.ok(link.href.startsWith(`${publicBase()}/`), link.href);
    });

    test('over HTTP/2 the :authority the client used becomes the public host of Location', async () => {
      const authority = `${PUBLIC_NAME}:${nginx.httpsPort}`;
      const client = http2Connect(`https://127.0.0.1:${nginx.httpsPort}`, { servername: PUBLIC_NAME, ca: nginx.ca });
      try {
        const stream = client.request({
          ':method': 'POST',
          ':path': '/api/orders',
          ':authority': authority,
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
        });
        stream.end(JSON.stringify({ CustomerId: CUSTOMER, Total: 2 }));
        // Headers and body as they arrive, so that a response stuck past its deadline shows what came.
        const seen: { headers?: Record<string, string | number>; body: string } = { body: '' };
        stream.on('response', (headers: Record<string, string | number>) => (seen.headers = headers));
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => (seen.body += chunk));
        await withDeadline(once(stream, 'end'), CALL_TIMEOUT_MS, () => {
          const status = seen.headers ? `status ${seen.headers[':status']}` : 'no response headers';
          return `the end of the HTTP/2 response to POST /api/orders via nginx; ${status}, body so far: ${seen.body}`;
        });
        const { headers = {}, body } = seen;
        assert.equal(headers[':status'], 201, body);
        assert.match(
          String(headers.location),
          new RegExp(`^https://${authority.replaceAll('.', '\\.')}/api/orders/\\d+$`),
        );
      } finally {
        client.destroy(); // not close(): that would wait for a stream stuck past its deadline
      }
    });

    test('list links and problem type URLs also use the public origin', async () => {
      await createOrder();
      await createOrder();
      const list = await https('GET', `/api/orders?limit=1&CustomerId=${CUSTOMER}`);
      expectStatus(list, 200);
      assert.ok(list.json._links.next.href.startsWith(`${publicBase()}/api/orders?`), list.json._links.next.href);
      assert.match(String(list.headers.link), new RegExp(`^<${publicBase()}/api/orders\\?[^>]+>; rel="next"$`));
      const missing = await https('GET', '/api/orders/999999');
      expectStatus(missing, 404);
      assert.ok(String(missing.json.type).startsWith(`${publicBase()}/problems/`), missing.json.type);
    });

    test('a GET with If-None-Match through nginx gets 304 with the same strong ETag, even when gzip is acceptable', async () => {
      const created = await createOrder();
      const path = `/api/orders/${created.json.Id}`;
      const got = await https('GET', path, { headers: { 'accept-encoding': 'gzip' } });
      expectStatus(got, 200);
      const etag = got.headers.etag;
      assert.match(String(etag), /^"[^"]+"$/, 'a strong ETag, not weakened to W/ by nginx');
      assert.equal(got.headers['content-encoding'], undefined, 'nginx does not compress API responses');
      assert.equal(etag, created.headers.etag);
      const notModified = await https('GET', path, {
        headers: { 'if-none-match': String(etag), 'accept-encoding': 'gzip' },
      });
      expectStatus(notModified, 304);
      assert.equal(notModified.headers.etag, etag);
      assert.equal(notModified.text, '');
    });

    test('If-Match passes through nginx: the current ETag updates, a stale one gets 412', async () => {
      const created = await createOrder();
      const path = `/api/orders/${created.json.Id}`;
      const patch = (ifMatch: string, total: number) =>
        https('PATCH', path, {
          body: { Total: total },
          contentType: 'application/merge-patch+json',
          headers: { 'if-match': ifMatch },
        });
      const first = await patch(String(created.headers.etag), 13);
      assert.equal(first.status, 200, first.text);
      assert.notEqual(first.headers.etag, created.headers.etag);
      const stale = await patch(String(created.headers.etag), 14);
      expectStatus(stale, 412);
      assert.equal(stale.headers.etag, first.headers.etag, 'the 412 names the current ETag');
    });

    test('X-Request-Id from the client reaches the app through nginx and comes back; nginx generates one when absent', async () => {
      const id = 'client-chosen-id-0123';
      const missing = await https('GET', '/api/orders/999999', { headers: { 'x-request-id': id } });
      assert.equal(missing.headers['x-request-id'], id);
      assert.equal(missing.json.requestId, id, 'the app used the same id');
      const generated = await https('GET', '/api/orders/999999');
      assert.match(String(generated.headers['x-request-id']), /^[0-9a-f]{32}$/, "nginx's $request_id");
      assert.equal(generated.json.requestId, generated.headers['x-request-id']);
      const invalid = await https('GET', '/api/orders/999999', { headers: { 'x-request-id': 'has space' } });
      assert.match(String(invalid.headers['x-request-id']), /^[0-9a-f]{32}$/, 'an id the app would refuse is replaced');
      assert.equal(invalid.json.requestId, invalid.headers['x-request-id']);
    });

    test('forwarding headers sent by the client cannot override the ones nginx sets', async () => {
      const res = await https('POST', '/api/orders', {
        body: { CustomerId: CUSTOMER, Total: 1 },
        headers: {
          forwarded: 'for=198.51.100.7;proto=http;host=evil.example',
          'x-forwarded-host': 'evil.example',
          'x-forwarded-proto': 'http',
          'x-forwarded-for': '198.51.100.7',
        },
      });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.headers.location, `${publicBase()}/api/orders/${res.json.Id}`);
    });

    test('plain HTTP is never proxied: reads are redirected to https, writes are refused', async () => {
      const read = await send('GET', '/api/orders/1', {
        scheme: 'http',
        port: nginx.httpPort,
        host: PUBLIC_NAME,
        headers: { authorization: `Bearer ${token}` },
      });
      expectStatus(read, 308);
      assert.equal(read.headers.location, `https://${PUBLIC_NAME}/api/orders/1`);
      const write = await send('POST', '/api/orders', {
        scheme: 'http',
        port: nginx.httpPort,
        host: PUBLIC_NAME,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      expectStatus(write, 403);
    });

    test('a Host name nginx does not serve gets the connection closed, not a response', async () => {
      await assert.rejects(
        send('GET', '/healthz', { scheme: 'http', port: nginx.httpPort, host: 'evil.example' }),
        /socket hang up|ECONNRESET/,
      );
      await assert.rejects(
        send('GET', '/healthz', { scheme: 'https', port: nginx.httpsPort, host: 'evil.example', ca: nginx.ca }),
        /unrecognized name/,
      );
    });
  });
  for (const dialect of testDialects()) {
    describe(`nginx forwarding the port on its own: X-Forwarded-Host $host, X-Forwarded-Port $server_port [${dialect}]`, () => {
      let server: TestServer;
      let nginx: RunningNginx;
      let token: string;
      before(async () => {
        server = await startServer(dialect, { TRUST_PROXY: '127.0.0.1' });
        token = await server.issuer.clientToken('orders:read orders:write events:read');
        nginx = await startNginx(nginxBinary, Number(new URL(server.url).port), { separatePort: true });
      });
      after(async () => {
        await nginx?.stop();
        await server?.close();
      });

      // The client names no port in Host, so nginx's $host and $http_host have none: only
      // X-Forwarded-Port ($server_port, a non-default port here) can tell the app which one it used.
      const https = (method: string, path: string, body?: unknown) =>
        send(method, path, {
          scheme: 'https',
          port: nginx.httpsPort,
          ca: nginx.ca,
          host: PUBLIC_NAME,
          headers: { authorization: `Bearer ${token}` },
          body,
        });
      const publicBase = () => `https://${PUBLIC_NAME}:${nginx.httpsPort}`;
      const underPublicBase = (href: unknown) => assert.ok(String(href).startsWith(`${publicBase()}/`), String(href));

      test('Location and _links carry the port nginx listens on', async () => {
        const res = await https('POST', '/api/orders', { CustomerId: CUSTOMER, Total: 4 });
        assert.equal(res.status, 201, res.text);
        assert.equal(res.headers.location, `${publicBase()}/api/orders/${res.json.Id}`);
        for (const link of Object.values(res.json._links) as { href: string }[]) underPublicBase(link.href);
      });

      test('list links, the Link header and problem type and instance carry the port', async () => {
        await https('POST', '/api/orders', { CustomerId: CUSTOMER, Total: 5 });
        await https('POST', '/api/orders', { CustomerId: CUSTOMER, Total: 6 });
        const list = await https('GET', `/api/orders?limit=1&CustomerId=${CUSTOMER}`);
        expectStatus(list, 200);
        underPublicBase(list.json._links.next.href);
        assert.equal(list.headers.link, `<${list.json._links.next.href}>; rel="next"`);
        const missing = await https('GET', '/api/orders/999999');
        expectStatus(missing, 404);
        assert.equal(missing.json.type, `${publicBase()}/problems/not-found`, missing.text);
        assert.equal(missing.json.instance, `${publicBase()}/api/orders/999999`, missing.text);
      });

      test('the Data links of the event the change wrote carry the port', async () => {
        const created = await https('POST', '/api/orders', { CustomerId: CUSTOMER, Total: 7 });
        assert.equal(created.status, 201, created.text);
        // On PostgreSQL an event is listed once every older transaction in the cluster has finished
        // (docs/reference/events.md), and other suites run transactions on the same server: poll for it.
        let event: { Data: { _links: unknown }; _links: { self: { href: string } } } | undefined;
        let last = '';
        await waitUntil(
          async () => {
            const events = await https('GET', '/api/events?type=order.created&limit=100');
            expectStatus(events, 200);
            last = events.text;
            event = events.json.Items.find((e: { Data: { Id: number } }) => e.Data.Id === created.json.Id);
            return event !== undefined;
          },
          10_000,
          () => `no order.created event for order ${created.json.Id}; last page: ${last}`,
        );
        assert.deepEqual(event!.Data._links, created.json._links);
        underPublicBase(event!._links.self.href);
      });
    });
  }
} else if (process.env.TEST_NGINX_REQUIRED === '1') {
  test('nginx is installed (TEST_NGINX_REQUIRED=1)', () => {
    assert.fail(
      'TEST_NGINX_REQUIRED=1 but no nginx binary at /usr/sbin/nginx or on PATH; install nginx-light (or nginx) to run test/proxy/nginx.test.ts',
    );
  });
}

describe('Signet without TRUST_PROXY, called directly', () => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await startServer('sqlite');
    token = await server.issuer.clientToken('orders:read orders:write');
  });
  after(() => server.close());

  test('ignores spoofed forwarding headers from an untrusted peer: links use the Host header', async () => {
    const res = await call(server.url, 'POST', '/api/orders', {
      token,
      body: { CustomerId: CUSTOMER, Total: 1 },
      headers: {
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'https',
        'x-forwarded-for': '198.51.100.7',
        forwarded: 'for=198.51.100.7;proto=https;host=evil.example',
      },
    });
    assert.equal(res.status, 201, res.text);
    const self = `${server.url}/api/orders/${res.json.Id}`;
    assert.equal(res.headers.get('location'), self);
    assert.equal(res.json._links.self.href, self);
  });

  test('does not adopt an X-Request-Id from an untrusted peer', async () => {
    const res = await call(server.url, 'GET', '/api/orders/999999', {
      token,
      headers: { 'x-request-id': 'spoofed-id' },
    });
    assert.notEqual(res.headers.get('x-request-id'), 'spoofed-id');
    assert.equal(res.json.requestId, res.headers.get('x-request-id'));
  });
});
