// An error answered before the request body has arrived (here the 401 to an anonymous upload, which
// the scope check sends before reading the body) closes the connection, and the close lingers so the
// client reads the answer instead of a TCP reset.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/server.ts';
import { RawConnection } from './raw-http.ts';
import { expectStatus } from '../helpers/expect.ts';

const CHUNK = 'x'.repeat(16_384);
const chunked = (data: string): string => `${data.length.toString(16)}\r\n${data}\r\n`;
const UPLOAD_HEAD =
  'POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';

/** Resolves true once the connection is closed, false if it is still open after `ms`. */
async function closesWithin(connection: RawConnection, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const closed = await Promise.race([connection.closed().then(() => true), timeout]);
  clearTimeout(timer);
  return closed;
}

describe('responses sent before the request body arrived', () => {
  let server: TestServer;
  let port: number;
  before(async () => {
    server = await startServer('sqlite');
    port = Number(new URL(server.url).port);
  });
  after(() => server.close());

  test('a 401 to an anonymous chunked upload that stops sending closes the connection at once', async () => {
    const connection = await RawConnection.open(port);
    try {
      connection.write(UPLOAD_HEAD + chunked(CHUNK)); // and then nothing more, as a client that saw the 401
      const [response] = await connection.responses(1);
      assert.equal(response?.status, 401, connection.received.slice(0, 300));
      assert.equal(response?.headers.connection, 'close');
      assert.ok(
        await closesWithin(connection, 5000),
        'the connection stayed open, waiting for the rest of a body nobody will read',
      );
      assert.ok(connection.closedByServer);
    } finally {
      connection.destroy();
    }
  });

  test('a client that goes on sending still reads the 401 (a lingering close, not a reset)', async () => {
    let answered = 0;
    const runs = 10;
    for (let run = 0; run < runs; run++) {
      const connection = await RawConnection.open(port);
      connection.write(UPLOAD_HEAD);
      for (let i = 0; i < 200 && !connection.socket.destroyed; i++) connection.write(chunked(CHUNK)); // 3.2 MB, queued at once
      assert.ok(await closesWithin(connection, 10_000), `run ${run}: the server never closed`);
      if (/^HTTP\/1\.1 401 /.test(connection.received)) answered++;
      connection.destroy();
    }
    assert.equal(answered, runs, 'every client read its 401');
  });

  test('a complete request keeps its keep-alive connection', async () => {
    const connection = await RawConnection.open(port);
    try {
      connection.write(
        'POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      );
      const [first] = await connection.responses(1);
      assert.ok(first, 'a response');
      expectStatus(first, 401);
      assert.notEqual(first?.headers.connection, 'close');
      connection.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const [, second] = await connection.responses(2);
      assert.equal(second?.status, 200, connection.received);
    } finally {
      connection.destroy();
    }
  });
});
