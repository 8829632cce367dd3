// During graceful shutdown a request that still arrives gets a 503 problem with Retry-After and
// Connection: close, like every other error, instead of Fastify's built-in JSON 503.
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import { startChildServer } from '../helpers/child-server.ts';
import { waitUntil, withDeadline } from '../helpers/deadline.ts';
import { CUSTOMER } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';
import { parseResponses, RawConnection } from './raw-http.ts';
import { expectStatus } from '../helpers/expect.ts';

describe('graceful shutdown', () => {
  test('a request arriving on an open keep-alive connection while closing is a 503 problem with Retry-After', async () => {
    const server = await startServer('sqlite');
    const connection = await RawConnection.open(Number(new URL(server.url).port));
    // One write: a complete request, then the start of a second one. Once the first is answered the
    // server has read both, so the connection is busy (mid-request) and survives close()'s reaping of
    // idle connections: the second request can only complete while the server is closing.
    connection.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const [first] = await connection.responses(1);
    assert.ok(first, 'a response');
    expectStatus(first, 200);

    const closing = server.app.close();
    await waitUntil(
      () => !server.app.server.listening,
      10_000,
      () => 'the server never stopped listening',
      0,
    );
    connection.write('\r\n');
    await withDeadline(
      connection.closed(),
      10_000,
      () => `the server closing the connection; received: ${connection.received}`,
    );
    const [, second] = parseResponses(connection.received);
    await withDeadline(closing, 20_000, 'app.close()');
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

interface Outcome {
  startedAt: number;
  status?: number;
  problemType?: string;
  orderId?: number;
  error?: string;
}

/** POST /api/orders on a fresh connection (agent false) or a keep-alive one. */
function postOrder(port: number, token: string, agent: Agent | false): Promise<Outcome> {
  const startedAt = Date.now();
  const body = JSON.stringify({ CustomerId: CUSTOMER, Total: 5 });
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/orders',
      agent,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
    });
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ startedAt, error: err.code ?? err.message }));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ startedAt, error: err.code ?? err.message }));
      res.on('end', () => {
        let json: { Id?: number; type?: string };
        try {
          json = JSON.parse(text) as { Id?: number; type?: string };
        } catch {
          // Thrown here it would end the whole test process; as an outcome it shows in the assertion that fails.
          return resolve({ startedAt, status: res.statusCode, error: `not JSON: ${text.slice(0, 300)}` });
        }
        resolve({ startedAt, status: res.statusCode, orderId: json.Id, problemType: json.type });
      });
    });
    req.end(body);
  });
}

describe('shutdown of the signet serve process', () => {
  test(
    'SIGTERM keeps the listener open for SHUTDOWN_DRAIN, answering new requests 503, then exits 0 with every acknowledged order stored',
    { timeout: 90_000 },
    async (t) => {
      const drainMs = 1500;
      const server = await startChildServer({ env: { SHUTDOWN_DRAIN: `${drainMs}ms` } });
      const token = await server.issuer.clientToken('orders:write');
      const outcomes: Outcome[] = [];
      const keepAlive = new Agent({ keepAlive: true, maxSockets: 4 });
      let sigtermAt = Infinity;
      // Each client posts until the listener is gone (ECONNREFUSED) or the test's deadline passes.
      const deadline = Date.now() + 30_000;
      const client = async (agent: Agent | false): Promise<void> => {
        while (Date.now() < deadline) {
          const outcome = await postOrder(server.port, token, agent);
          outcomes.push(outcome);
          if (outcome.error === 'ECONNREFUSED' && outcome.startedAt > sigtermAt) return;
        }
      };
      try {
        const clients = [
          ...Array.from({ length: 4 }, () => client(keepAlive)),
          ...Array.from({ length: 4 }, () => client(false)),
        ];
        await waitUntil(
          () => outcomes.filter((o) => o.status === 201).length >= 40,
          deadline - Date.now(),
          () => `no orders were created: ${JSON.stringify(outcomes.slice(-3))}`,
          10,
        );
        sigtermAt = Date.now();
        server.child.kill('SIGTERM');
        // Each request has a 10 s timeout and each client stops at the deadline: this only names a hang.
        await withDeadline(
          Promise.all(clients),
          60_000,
          () => `the clients stopping; last: ${JSON.stringify(outcomes.slice(-3))}`,
        );
        assert.equal(await server.waitForExit(30_000), 0, server.output());

        // Until shortly before the drain ends (signal delivery and the last requests' round trips aside),
        // every request got an answer: no reset, no refused connection.
        const duringDrain = outcomes.filter((o) => o.startedAt < sigtermAt + drainMs - 300);
        const unanswered = duringDrain.filter((o) => o.status === undefined);
        assert.deepEqual(unanswered, [], `requests sent before or during the drain got no answer`);
        const refusedLater = outcomes.filter(
          (o) => o.startedAt >= sigtermAt + 200 && o.startedAt < sigtermAt + drainMs - 300,
        );
        assert.ok(refusedLater.length > 0, 'requests were sent during the drain');
        for (const outcome of refusedLater) {
          assert.equal(outcome.status, 503, JSON.stringify(outcome));
          assert.match(outcome.problemType ?? '', /\/problems\/shutting-down$/);
        }
        // Nothing acknowledged was lost.
        const acknowledged = outcomes.filter((o) => o.status === 201).map((o) => o.orderId);
        const database = new DatabaseSync(join(server.dir, 'signet.db'), { readOnly: true });
        const stored = new Set(
          database
            .prepare('select id from orders')
            .all()
            .map((row) => Number(row.id)),
        );
        database.close();
        assert.deepEqual(
          acknowledged.filter((id) => !stored.has(Number(id))),
          [],
        );
        const count = (pick: (o: Outcome) => boolean): number => outcomes.filter(pick).length;
        t.diagnostic(
          `201: ${acknowledged.length}, 503 shutting-down: ${count((o) => o.status === 503)}, refused after the drain: ${count((o) => o.error === 'ECONNREFUSED')}, other transport errors: ${count((o) => o.error !== undefined && o.error !== 'ECONNREFUSED')}`,
        );
      } finally {
        keepAlive.destroy();
        await server.stop();
      }
    },
  );

  test('past the grace the process logs the requests it cuts and exits with code 1', { timeout: 60_000 }, async () => {
    // Grace: SHUTDOWN_DRAIN 0 + WEBHOOK_TIMEOUT 5 s + 5 s.
    const server = await startChildServer({ env: { SHUTDOWN_DRAIN: '0s', WEBHOOK_TIMEOUT: '5s' } });
    const token = await server.issuer.clientToken('orders:write');
    const connection = await RawConnection.open(server.port);
    try {
      // A request whose body never finishes: it is still in flight when the grace runs out.
      connection.write(
        `POST /api/orders?secret=no HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"Cust`,
      );
      const reqId = (
        await server.waitFor(/"reqId":"([^"]+)"[^\n]*"url":"\/api\/orders\?secret=no"[^\n]*"msg":"incoming request"/)
      )[1];
      server.child.kill('SIGTERM');
      const code = await server.waitForExit(20_000);
      assert.equal(code, 1, server.output());
      const line = (
        await server.waitFor(
          /^.*shutdown did not finish within 10000 ms; exiting with code 1, cutting 1 request\(s\).*$/m,
        )
      )[0];
      const logged = JSON.parse(line) as {
        cut: Array<{ reqId: string; method: string; path: string; runningMs: number }>;
      };
      assert.equal(logged.cut.length, 1, line);
      assert.deepEqual(
        { ...logged.cut[0], runningMs: undefined },
        { reqId, method: 'POST', path: '/api/orders', runningMs: undefined },
      );
      assert.ok((logged.cut[0]?.runningMs ?? 0) >= 10_000, line);
    } finally {
      connection.socket.destroy();
      await server.stop();
    }
  });
});
