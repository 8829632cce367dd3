// Pipelining (RFC 9112 §9.3.2): a server answers pipelined requests in the order it received them. A
// valid write followed, in the same packet, by a request Node's parser rejects must get its own
// response first, then the error for the bad request, and only then is the connection closed; a client
// must never take the error for the answer to its write.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { afterResponsesInFlight } from '../../src/http/problems/malformed.ts';
import { pipelined, RawConnection, rawRequest, requestText, type RawResponse } from './raw-http.ts';

/** Requests Node's parser refuses, and the problem each gets. */
const BAD_REQUESTS: { name: string; text: string; statuses: number[] }[] = [
  // Bytes that are no request line at all are 400 (malformed.ts), pipelined or alone: the follower is
  // judged by its own bytes, not by the request line that opened the packet.
  { name: 'a garbage request line', text: 'GARBAGE\r\n\r\n', statuses: [400] },
  // A request line with a method this server does not implement is 501 (RFC 9110 §9.1), pipelined too.
  { name: 'an unknown method', text: 'FOO /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', statuses: [501] },
  // RFC 9112 §5.2: a server MUST either reject obs-fold or replace it; Node rejects it.
  {
    name: 'a folded header line',
    text: 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: 1\r\n  continued\r\n\r\n',
    statuses: [400],
  },
  {
    name: 'a 20 KB header',
    text: `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`,
    statuses: [431],
  },
];

const SLUGS: Record<number, string> = { 400: 'bad-request', 431: 'header-fields-too-large', 501: 'not-implemented' };

function describeAll(responses: RawResponse[], received: string): string {
  return `${responses.length} responses: ${responses.map((r) => `${r.status} ${r.body.slice(0, 200)}`).join(' | ')}; raw: ${JSON.stringify(received.slice(0, 600))}`;
}

for (const dialect of testDialects()) {
  describe(`pipelined requests with a malformed one [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    let port: number;
    before(async () => {
      ({ server, token } = await startWithClientToken(dialect));
      port = Number(new URL(server.url).port);
    });
    after(() => server.close());

    const auth = (): [string, string] => ['Authorization', `Bearer ${token}`];
    const createOrder = (total: number): string =>
      requestText('POST', '/api/orders', {
        headers: [auth(), ['Content-Type', 'application/json']],
        body: JSON.stringify({ CustomerId: CUSTOMER, Total: total }),
      });

    /** The bad request's answer: a problem of one of the expected statuses, and the connection closed. */
    function expectErrorLast(
      result: Awaited<ReturnType<typeof pipelined>>,
      statuses: number[],
      count: number,
    ): RawResponse {
      const { responses, received } = result;
      assert.equal(responses.length, count, describeAll(responses, received));
      const error = responses[count - 1]!;
      assert.ok(
        statuses.includes(error.status),
        `expected ${statuses.join('/')} last: ${describeAll(responses, received)}`,
      );
      expectProblem(error, error.status, SLUGS[error.status] ?? 'unexpected-status');
      assert.ok(error.headers['x-request-id'], 'the error carries a request id');
      assert.equal(error.headers.connection, 'close');
      assert.ok(result.closedByServer, 'the server closed the connection after the error');
      return error;
    }

    for (const bad of BAD_REQUESTS) {
      test(`a created order is answered 201 before the error for ${bad.name}`, async () => {
        const total = 100 + BAD_REQUESTS.indexOf(bad);
        const result = await pipelined(port, createOrder(total) + bad.text, 2);
        expectErrorLast(result, bad.statuses, 2);
        const created = result.responses[0]!;
        expectStatus(created, 201);
        assert.equal(created.json.Total, total, created.body);
        const stored = await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token });
        expectStatus(stored, 200);
        assert.equal(stored.json.Total, total, stored.text);
      });
    }

    for (const bad of BAD_REQUESTS) {
      test(`${bad.name} pipelined after a write gets the answer it gets alone (status, type, media type)`, async () => {
        const alone = await rawRequest(port, bad.text);
        const result = await pipelined(port, createOrder(500) + bad.text, 2);
        const follower = expectErrorLast(result, bad.statuses, 2);
        const shape = (r: RawResponse) => [r.status, r.headers['content-type'], r.json?.type, r.headers.connection];
        assert.deepEqual(
          shape(follower),
          shape(alone),
          `alone: ${alone.status} ${alone.body}; ${describeAll(result.responses, result.received)}`,
        );
      });
    }

    test('a pipelined pay action is answered 200 before the error for a garbage request line', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 7 },
      });
      expectStatus(created, 201);
      const pay = requestText('POST', `/api/orders/${created.json.Id}/pay`, { headers: [auth()], body: '' });
      const result = await pipelined(port, pay + 'GARBAGE\r\n\r\n', 2);
      expectErrorLast(result, [400], 2);
      expectStatus(result.responses[0]!, 200);
      assert.equal(result.responses[0]!.json.Status, 'paid', result.responses[0]!.body);
    });

    test('responses Node queued for several pipelined writes all go out before the error', async () => {
      const result = await pipelined(
        port,
        createOrder(201) + createOrder(202) + createOrder(203) + 'GARBAGE\r\n\r\n',
        4,
      );
      expectErrorLast(result, [400], 4);
      assert.deepEqual(
        result.responses.slice(0, 3).map((r) => [r.status, r.json?.Total]),
        [
          [201, 201],
          [201, 202],
          [201, 203],
        ],
        describeAll(result.responses, result.received),
      );
    });

    /** A write whose chunked body breaks off in a chunk that is no chunk: its handler would wait for ever. */
    const brokenChunkedWrite = (): string =>
      'POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
      `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
      '2\r\n{}\r\nZZ\r\n';

    test('a write whose chunked body breaks off in a bad chunk is answered 400 at once, not left waiting', async () => {
      const result = await pipelined(port, brokenChunkedWrite(), 1);
      expectErrorLast(result, [400], 1);
    });

    test('a write answered 201, then a write with a bad chunk: 201, then 400, then the close', async () => {
      const result = await pipelined(port, createOrder(301) + brokenChunkedWrite(), 2);
      expectErrorLast(result, [400], 2);
      expectStatus(result.responses[0]!, 201);
      assert.equal(result.responses[0]!.json.Total, 301, result.responses[0]!.body);
    });

    test('a CONNECT pipelined after a write is answered 501 after its 201', async () => {
      const result = await pipelined(
        port,
        createOrder(401) + 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n',
        2,
      );
      expectErrorLast(result, [501], 2);
      expectStatus(result.responses[0]!, 201);
      assert.equal(result.responses[0]!.json.Total, 401, result.responses[0]!.body);
    });

    test('a client that leaves while its write is in flight: the server closes its side and serves on', async () => {
      const sockets: Socket[] = [];
      const errors: Socket[] = [];
      const onConnection = (socket: Socket): number => sockets.push(socket);
      const onClientError = (_err: Error, socket: Socket): number => errors.push(socket);
      server.app.server.on('connection', onConnection).on('clientError', onClientError);
      try {
        const connection = await RawConnection.open(port);
        connection.write(createOrder(301) + 'GARBAGE\r\n\r\n');
        await waitUntil(
          () => errors.length > 0,
          10_000,
          () => `the server seeing the bad request; the client received: ${JSON.stringify(connection.received)}`,
        );
        connection.destroy();
        const socket = sockets.at(-1)!;
        await waitUntil(
          () => socket.destroyed,
          10_000,
          () =>
            `the server closing the connection of a client that left; its socket: writable ${socket.writable}, readable ${socket.readable}`,
        );
      } finally {
        server.app.server.off('connection', onConnection).off('clientError', onClientError);
      }
      expectStatus(await call(server.url, 'GET', '/api/orders', { token }), 200);
    });
  });
}

describe('waiting for the responses in flight', () => {
  /** A stand-in for Node's socket: `_httpMessage` is the response being written. */
  const fakeSocket = (): Socket & { _httpMessage: ServerResponse | null } =>
    Object.assign(new EventEmitter(), { _httpMessage: null }) as unknown as Socket & {
      _httpMessage: ServerResponse | null;
    };
  const fakeResponse = (): ServerResponse => new EventEmitter() as unknown as ServerResponse;

  test('runs at once when nothing is in flight', () => {
    let ran = 0;
    afterResponsesInFlight(fakeSocket(), () => ran++);
    assert.equal(ran, 1);
  });

  test('runs after the current response and the one Node attaches next have finished', () => {
    const socket = fakeSocket();
    const [first, second] = [fakeResponse(), fakeResponse()];
    socket._httpMessage = first;
    let ran = 0;
    afterResponsesInFlight(socket, () => ran++);
    socket._httpMessage = second; // what Node does in its own 'finish' listener, which runs before ours
    first.emit('finish');
    assert.equal(ran, 0, 'the queued response is still to be written');
    socket._httpMessage = null;
    second.emit('finish');
    assert.equal(ran, 1);
    assert.equal(first.listenerCount('finish') + second.listenerCount('finish') + socket.listenerCount('close'), 0);
  });

  test('a connection that closes first leaves no listener and never runs the answer', () => {
    const socket = fakeSocket();
    const response = fakeResponse();
    socket._httpMessage = response;
    let ran = 0;
    afterResponsesInFlight(socket, () => ran++);
    socket.emit('close');
    assert.equal(ran, 0);
    assert.equal(response.listenerCount('finish'), 0, 'a finish listener was left behind');
    assert.equal(socket.listenerCount('close'), 0, 'a close listener was left behind');
  });
});
