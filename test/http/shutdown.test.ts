// During graceful shutdown a request that still arrives gets a 503 problem with Retry-After and
// Connection: close, like every other error, instead of Fastify's built-in JSON 503.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startServer } from '../helpers/server.ts';
import { parseResponses, RawConnection } from './raw-http.ts';

describe('graceful shutdown', () => {
  test('a request arriving on an open keep-alive connection while closing is a 503 problem with Retry-After', async () => {
    const server = await startServer('sqlite');
    const connection = await RawConnection.open(Number(new URL(server.url).port));
    // One write: a complete request, then the start of a second one. Once the first is answered the
    // server has read both, so the connection is busy (mid-request) and survives close()'s reaping of
    // idle connections: the second request can only complete while the server is closing.
    connection.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const [first] = await connection.responses(1);
    assert.equal(first?.status, 200);

    const closing = server.app.close();
    const deadline = Date.now() + 10_000;
    while (server.app.server.listening) {
      assert.ok(Date.now() < deadline, 'the server never stopped listening');
      await new Promise((resolve) => setImmediate(resolve));
    }
    connection.write('\r\n');
    await connection.closed();
    const [, second] = parseResponses(connection.received);
    await closing;
    await server.close(); // drops the test database (the app is already closed)

    assert.ok(second, `no second response: ${connection.received}`);
    assert.equal(second.status, 503, second.body);
    assert.equal(second.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(second.headers['retry-after'], '1');
    assert.equal(second.headers.connection, 'close');
    assert.ok(second.headers['x-request-id']);
    assert.equal(second.json.requestId, second.headers['x-request-id']);
    assert.match(second.json.type, /\/problems\/shutting-down$/);
    assert.equal(second.json.status, 503);
    assert.equal(second.json.instance, 'http://127.0.0.1/api/orders');
    assert.ok(connection.closedByServer, 'the server closed the connection after answering');
  });
});
