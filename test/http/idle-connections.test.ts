// Idle connections cannot lock clients out (docs/operations/failure-behaviour.md, "Connections"): at MAX_CONNECTIONS a
// new client closes the connection idle longest and is served, while connections with a request in flight are never
// closed for the cap; a silent or slow-header connection gets 408 and is closed after HEADERS_TIMEOUT, and a
// keep-alive connection idle between requests after KEEP_ALIVE_TIMEOUT. Real sockets on 127.0.0.1.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { parseResponses, RawConnection, requestText } from './raw-http.ts';

const portOf = (server: TestServer): number => Number(new URL(server.url).port);

/** `count` connections that never send a byte, each connected (or closed by the server) before this resolves. */
async function openSilent(port: number, count: number): Promise<RawConnection[]> {
  const connections: RawConnection[] = [];
  for (let i = 0; i < count; i++) connections.push(await RawConnection.open(port));
  return connections;
}

const openCount = (connections: RawConnection[]): number => connections.filter((c) => !c.socket.destroyed).length;

describe('idle connections and the connection cap', () => {
  const servers: TestServer[] = [];
  const connections: RawConnection[] = [];
  after(async () => {
    for (const connection of connections) connection.destroy();
    for (const server of servers) await server.close();
  });

  async function serverWith(env: Record<string, string>): Promise<TestServer> {
    const server = await startServer('sqlite', env);
    servers.push(server);
    return server;
  }

  test('at MAX_CONNECTIONS silent connections give way: a new client is served while the flood stays open', async () => {
    const cap = 300;
    // Long timeouts: here only the cap closes connections.
    const server = await serverWith({ MAX_CONNECTIONS: String(cap), HEADERS_TIMEOUT: '60s' });
    const flood = await openSilent(portOf(server), cap);
    connections.push(...flood);
    // Three clients, each on a keep-alive connection of its own that stays open.
    for (let client = 0; client < 3; client++) {
      const connection = await RawConnection.open(portOf(server));
      connections.push(connection);
      connection.write(requestText('GET', '/healthz'));
      const [health] = await connection.responses(1);
      assert.equal(health?.status, 200, `client ${client}: ${connection.received}`);
    }
    // Each new client closed the connection idle longest: the oldest of the flood.
    await waitUntil(
      () => flood.slice(0, 3).every((c) => c.socket.destroyed),
      10_000,
      () => `the three oldest silent connections are still open (${openCount(flood)} of ${cap} open)`,
    );
    assert.ok(openCount(flood) >= cap - 6, `${openCount(flood)} of the flood open: more closed than needed`);
  });

  test('connections with a request in flight are never closed for the cap; a new one is, until they finish', async () => {
    const cap = 5;
    const server = await serverWith({ MAX_CONNECTIONS: String(cap), REQUEST_TIMEOUT: '60s' });
    const token = await server.issuer.clientToken('orders:write');
    // Five uploads whose body never completes: each is a request in flight once the server has answered its
    // `Expect: 100-continue` (RFC 9110 §10.1.1), which it does when it starts the request.
    const uploads = await openSilent(portOf(server), cap);
    connections.push(...uploads);
    for (const upload of uploads)
      upload.write(
        requestText('POST', '/api/orders', {
          headers: [
            ['Authorization', `Bearer ${token}`],
            ['Content-Type', 'application/json'],
            ['Content-Length', '1000'],
            ['Expect', '100-continue'],
          ],
        }) + '{"Cust',
      );
    await waitUntil(
      () => uploads.every((u) => u.received.startsWith('HTTP/1.1 100 Continue')),
      10_000,
      () => `not every upload started: ${JSON.stringify(uploads.map((u) => u.received.slice(0, 30)))}`,
    );
    const late = await RawConnection.open(portOf(server));
    connections.push(late);
    await late.closed(10_000);
    assert.equal(late.received, '', 'closed without an answer');
    assert.equal(openCount(uploads), cap, 'no upload was closed for the cap');
    for (const upload of uploads) upload.destroy();
    await waitUntil(
      async () => (await call(server.url, 'GET', '/healthz').catch(() => ({ status: 0 }))).status === 200,
      10_000,
      () => 'the server serves again once the uploads are gone',
    );
  });

  test('a silent or slow-header connection gets 408 and is closed after HEADERS_TIMEOUT', async () => {
    const server = await serverWith({ HEADERS_TIMEOUT: '1s' });
    const [silent, slow] = await openSilent(portOf(server), 2);
    connections.push(silent!, slow!);
    slow!.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    for (const connection of [silent!, slow!]) {
      await connection.closed(10_000);
      const [response] = parseResponses(connection.received);
      assert.equal(response?.status, 408, connection.received);
      assert.match(response?.headers['content-type'] ?? '', /^application\/problem\+json/, connection.received);
    }
  });

  test('a keep-alive connection idle between requests is closed after KEEP_ALIVE_TIMEOUT', async () => {
    const server = await serverWith({ KEEP_ALIVE_TIMEOUT: '1s' });
    const [connection] = await openSilent(portOf(server), 1);
    connections.push(connection!);
    connection!.write(requestText('GET', '/healthz'));
    const [response] = await connection!.responses(1);
    assert.equal(response?.status, 200, connection!.received);
    assert.match(response?.headers['keep-alive'] ?? '', /timeout=1/, JSON.stringify(response?.headers));
    await connection!.closed(10_000);
    assert.ok(connection!.closedByServer, 'the server ended the connection');
  });

  test('HEADERS_TIMEOUT may not exceed REQUEST_TIMEOUT', () => {
    assert.throws(() => loadConfig({ HEADERS_TIMEOUT: '90s', REQUEST_TIMEOUT: '60s' }), /HEADERS_TIMEOUT/);
    const defaults = loadConfig({});
    assert.deepEqual(
      [defaults.headersTimeoutMs, defaults.keepAliveTimeoutMs, defaults.requestTimeoutMs],
      [5000, 72_000, 60_000],
    );
  });
});
