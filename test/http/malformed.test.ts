// Requests that never reach a route still get problem+json with a request id: parser errors (closing
// the connection), undecodable targets, and Host header violations (RFC 9112 §3.2).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/server.ts';
import { rawRequest } from './raw-http.ts';
import { expectProblem } from '../helpers/expect.ts';

/** The shared problem check, plus the exact media type, an absolute type, the members, the request id and no-store. */
const SHAPE = { exactMediaType: true, members: true, requestId: true, absoluteType: true, noStore: true } as const;

describe('malformed requests', () => {
  let server: TestServer;
  let port: number;
  before(async () => {
    server = await startServer('sqlite');
    port = Number(new URL(server.url).port);
  });
  after(() => server.close());

  const send = (text: string) => rawRequest(port, text);

  test('an unknown method is a 501 problem and the connection is closed', async () => {
    const res = await send('FOO /api/orders/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expectProblem(res, 501, 'not-implemented', SHAPE);
    assert.equal(res.headers.connection, 'close');
    assert.ok(res.closedByServer);
  });

  test('CONNECT is a 501 problem with a request id, and the connection is closed', async () => {
    for (const target of ['127.0.0.1:443', 'example.com:80']) {
      const res = await send(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      expectProblem(res, 501, 'not-implemented', SHAPE);
      assert.match(res.json.detail, /CONNECT/);
      assert.equal(res.headers.connection, 'close');
      assert.ok(res.closedByServer, 'closed after the answer');
    }
  });

  test('a malformed header line is a 400 problem and the connection is closed', async () => {
    const res = await send('GET /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n');
    expectProblem(res, 400, 'bad-request', SHAPE);
    assert.ok(res.closedByServer);
  });

  test('bytes that are not a request line at all are 400, not 501', async () => {
    const res = await send('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n');
    expectProblem(res, 400, 'bad-request', SHAPE);
    assert.ok(res.closedByServer);
  });

  test('an over-long URL is a 431 problem', async () => {
    const res = await send(`GET /api/orders?q=${'x'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    expectProblem(res, 431, 'header-fields-too-large', SHAPE);
    assert.ok(res.closedByServer);
  });

  test('a path with invalid percent-encoding or non-UTF-8 octets is a 400 problem', async () => {
    for (const path of ['/api/orders/%zz', '/api/orders/%ff', '/api/orders/%c3%28']) {
      const res = await send(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      expectProblem(res, 400, 'bad-request', SHAPE);
      assert.equal(res.json.instance, `http://127.0.0.1${path}`);
    }
  });

  test('a path segment over the router limit is a 414 problem', async () => {
    const res = await send(`GET /api/orders/${'1'.repeat(300)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    expectProblem(res, 414, 'uri-too-long', SHAPE);
  });

  test('an HTTP/1.1 request without Host is a 400 problem and the connection is closed; HTTP/1.0 may omit it', async () => {
    const res = await send('GET /healthz HTTP/1.1\r\n\r\n');
    expectProblem(res, 400, 'bad-request', SHAPE);
    assert.match(res.json.detail, /Host/);
    assert.equal(res.headers.connection, 'close', JSON.stringify(res.headers));
    assert.ok(res.closedByServer, 'the server closed the connection after the 400');
    const old = await send('GET /healthz HTTP/1.0\r\n\r\n');
    assert.equal(old.status, 200, old.body);
  });

  test('a request with two Host header lines is a 400 problem', async () => {
    for (const hosts of ['Host: a.example\r\nHost: b.example', 'Host: a.example\r\nhost: a.example']) {
      const res = await send(`GET /healthz HTTP/1.1\r\n${hosts}\r\n\r\n`);
      expectProblem(res, 400, 'bad-request', SHAPE);
      assert.match(res.json.detail, /more than one Host/);
      assert.ok(res.closedByServer, `closed after the 400: ${JSON.stringify(res.headers)}`);
    }
  });

  test('a Host that is not a valid host[:port] is a 400 problem; valid ones are served', async () => {
    for (const host of [
      'a b',
      'evil.example:99999',
      'evil.example:0',
      'evil..example',
      '[::1',
      '[not-ipv6]',
      'user@evil.example',
      'evil.example/x',
    ]) {
      const res = await send(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      expectProblem(res, 400, 'bad-request', SHAPE);
      assert.match(res.json.detail, /Host/, host);
    }
    for (const host of ['Example.COM:8080', '127.0.0.1', '[::1]:3000', 'internal_svc']) {
      const res = await send(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      assert.equal(res.status, 200, `${host}: ${res.body}`);
    }
  });

  test('the authorization server gets the same Host check', async () => {
    const res = await send(
      'GET /oauth/.well-known/openid-configuration HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n',
    );
    expectProblem(res, 400, 'bad-request', SHAPE);
  });
});
