// Webhook delivery over real HTTP to real receivers: what goes on the wire (signatures that independent
// verifiers accept), retries (Retry-After, resets, timeouts, redirects, an exhausted schedule), endpoint
// health (410 Gone, failing for too long), manual redelivery and recovery, per-endpoint fairness, and
// what a graceful shutdown leaves in the database.
//
// Every test gets its own endpoint and receiver and sends pings (delivered to that endpoint only), so
// the tests of one server do not see each other's deliveries.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { verify as verifyGithubSignature } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { openDatabase } from '../../src/db/database.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import { createTestDatabase, testDialects } from '../helpers/databases.ts';
import { closeWithin, listenOnLoopback } from '../helpers/deadline.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  WEBHOOK_SCOPES,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';
import { expectStatus } from '../helpers/expect.ts';

/** Three attempts 0 s, ~100 ms, ~100 ms apart; the shortest allowed timeout; disable after the minimum of 60 s. */
const ENV = {
  ...LOCAL_WEBHOOKS_ENV,
  WEBHOOK_RETRY_SCHEDULE: '0s,100ms,100ms',
  WEBHOOK_TIMEOUT: '5s',
  WEBHOOK_DISABLE_AFTER: '60s',
  WEBHOOK_CONCURRENCY: '8',
  WEBHOOK_ENDPOINT_CONCURRENCY: '2',
};

interface Attempt {
  Attempt: number;
  StartedAtUtc: string;
  DurationMs: number;
  StatusCode: number | null;
  ErrorKind: string | null;
  ErrorDetail: string | null;
  ResponseExcerpt: string | null;
}

interface Body {
  Id: string;
  Type: string;
  OccurredAtUtc: string;
  Timestamp: string;
  Data: Record<string, unknown>;
}

const header = (headers: IncomingHttpHeaders, name: string): string => {
  const value = headers[name];
  assert.equal(typeof value, 'string', `header ${name}`);
  return value as string;
};

/** A receiver that answers 200 only after `delayMs` (the helper's receiver answers at once or never). */
async function startDelayedReceiver(
  delayMs: number,
): Promise<{ url: string; received: string[]; answered: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const state = { url: '', received: [] as string[], answered: 0, close: async () => {} };
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      state.received.push(String(request.headers['x-service-delivery']));
      setTimeout(() => {
        response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        state.answered += 1;
      }, delayMs);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  state.url = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  state.close = async () => {
    for (const socket of sockets) socket.destroy();
    await closeWithin(server, () => `the delayed receiver (${sockets.size} sockets)`);
  };
  return state;
}

for (const dialect of testDialects()) {
  describe(`webhook delivery [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    const receivers: TestReceiver[] = [];
    before(async () => {
      server = await startServer(dialect, ENV);
      token = await server.issuer.clientToken(WEBHOOK_SCOPES);
    });
    after(async () => {
      await Promise.all(receivers.map((r) => r.close()));
      await server.close();
    });

    const receiver = async (): Promise<TestReceiver> => {
      const r = await startReceiver();
      receivers.push(r);
      return r;
    };
    const register = async (url: string): Promise<{ id: string; secret: string }> => {
      const created = await registerEndpoint(server, token, url, ['webhook.ping']);
      return { id: created.json.Id, secret: created.json.Secret };
    };
    const ping = async (endpointId: string): Promise<string> => {
      const res = await call(server.url, 'POST', `/api/webhooks/${endpointId}/ping`, { token });
      assert.equal(res.status, 202, res.text);
      return res.json.Id;
    };
    const delivery = async (id: string) => {
      const res = await call(server.url, 'GET', `/api/webhooks/deliveries/${id}`, { token });
      assert.equal(res.status, 200, res.text);
      return res.json as {
        Id: string;
        State: string;
        AttemptCount: number;
        LastStatusCode: number | null;
        Attempts: Attempt[];
      };
    };
    const settled = async (id: string, state: 'succeeded' | 'failed', timeoutMs = 10_000) => {
      let last: Awaited<ReturnType<typeof delivery>> | undefined;
      await waitUntil(
        async () => (last = await delivery(id)).State === state,
        timeoutMs,
        () => `delivery ${id} ${state}; last: ${JSON.stringify(last)}`,
      );
      return last!;
    };
    const endpoint = async (id: string) => (await call(server.url, 'GET', `/api/webhooks/${id}`, { token })).json;
    const disabledEvents = async () => {
      const res = await call(server.url, 'GET', '/api/events?type=webhook.endpoint.disabled&limit=500', { token });
      assert.equal(res.status, 200, res.text);
      return res.json.Items as {
        Type: string;
        Data: { EndpointId: string; Reason: string; FailingSinceUtc: string };
      }[];
    };

    test('independent verifiers (@octokit/webhooks-methods, standardwebhooks) accept the exact bytes and headers Signet sends', async () => {
      const r = await receiver();
      const { id, secret } = await register(r.url);
      const deliveryId = await ping(id);
      const [got] = await r.waitFor(1);
      const { headers, body } = got!;

      assert.equal(
        await verifyGithubSignature(secret, body, header(headers, 'x-service-signature-256')),
        true,
        'GitHub-style signature',
      );
      const payload = new Webhook(secret).verify(body, headers as Record<string, string>) as Body;
      assert.equal(payload.Type, 'webhook.ping');
      // The verifiers are not trivially satisfied: one changed byte fails both.
      const tampered = body.replace('"webhook.ping"', '"webhook.pong"');
      assert.equal(await verifyGithubSignature(secret, tampered, header(headers, 'x-service-signature-256')), false);
      assert.throws(() => new Webhook(secret).verify(tampered, headers as Record<string, string>));

      assert.equal(header(headers, 'content-type'), 'application/json');
      assert.match(header(headers, 'user-agent'), /Signet/);
      assert.equal(header(headers, 'x-service-delivery'), header(headers, 'webhook-id'));
      assert.equal(header(headers, 'x-service-delivery'), deliveryId);
      assert.match(deliveryId, /^dlv_/);
      assert.equal(header(headers, 'x-service-event'), (JSON.parse(body) as Body).Type);
      // The URL as stored and called: the parser's serialisation, with the empty path as `/`.
      assert.deepEqual((JSON.parse(body) as Body).Data, { EndpointId: id, Url: `${r.url}/` });
    });

    test('WEBHOOK_HEADER_NAME=Acme names the headers X-Acme-Signature-256, X-Acme-Delivery and X-Acme-Event', async () => {
      const acme = await startServer(dialect, { ...ENV, WEBHOOK_HEADER_NAME: 'Acme' }, server.issuer);
      try {
        const r = await receiver();
        const created = await registerEndpoint(acme, token, r.url, ['webhook.ping']);
        const res = await call(acme.url, 'POST', `/api/webhooks/${created.json.Id}/ping`, { token });
        expectStatus(res, 202);
        const [got] = await r.waitFor(1);
        const { headers, body } = got!;
        assert.equal(
          await verifyGithubSignature(created.json.Secret, body, header(headers, 'x-acme-signature-256')),
          true,
        );
        assert.equal(header(headers, 'x-acme-delivery'), res.json.Id);
        assert.equal(header(headers, 'x-acme-event'), 'webhook.ping');
        for (const name of ['x-service-signature-256', 'x-service-delivery', 'x-service-event'])
          assert.equal(headers[name], undefined, name);
        new Webhook(created.json.Secret).verify(body, headers as Record<string, string>);
      } finally {
        await acme.close();
      }
    });

    test('503 with Retry-After: 1 is retried no sooner than a second later with the same delivery id, a fresh Timestamp and the same OccurredAtUtc; the log keeps both attempts', async () => {
      const r = await receiver();
      const big = 'x'.repeat(10 * 1024);
      r.answer = (_request, index) =>
        index === 0
          ? { status: 503, headers: { 'retry-after': '1', 'content-type': 'text/plain' }, body: big }
          : { status: 200, body: 'thanks' };
      const { id, secret } = await register(r.url);
      const deliveryId = await ping(id);
      const done = await settled(deliveryId, 'succeeded');

      assert.equal(done.AttemptCount, 2);
      const [first, second] = done.Attempts;
      assert.ok(first && second && done.Attempts.length === 2, JSON.stringify(done.Attempts));
      assert.deepEqual([first.Attempt, second.Attempt], [1, 2]);
      assert.deepEqual([first.StatusCode, second.StatusCode], [503, 200]);
      assert.deepEqual([first.ErrorKind, second.ErrorKind], ['status', null]);
      for (const a of done.Attempts)
        assert.ok(Number.isInteger(a.DurationMs) && a.DurationMs >= 0, `DurationMs ${a.DurationMs}`);
      assert.equal(Buffer.byteLength(first.ResponseExcerpt ?? ''), 4096, 'the first 4 KiB of the 10 KiB answer');
      assert.equal(first.ResponseExcerpt, big.slice(0, 4096));
      assert.equal(second.ResponseExcerpt, 'thanks');
      const gap = Date.parse(second.StartedAtUtc) - Date.parse(first.StartedAtUtc);
      assert.ok(gap >= 1000, `Retry-After: 1 honoured (the schedule alone says ~100 ms); attempts ${gap} ms apart`);

      assert.equal(r.received.length, 2);
      const [one, two] = r.received.map((d) => ({ headers: d.headers, body: JSON.parse(d.body) as Body }));
      assert.equal(header(one!.headers, 'x-service-delivery'), deliveryId);
      assert.equal(header(two!.headers, 'x-service-delivery'), deliveryId);
      assert.equal(header(two!.headers, 'webhook-id'), deliveryId);
      assert.equal(two!.body.Id, one!.body.Id);
      assert.equal(two!.body.OccurredAtUtc, one!.body.OccurredAtUtc);
      assert.ok(
        Date.parse(two!.body.Timestamp) > Date.parse(one!.body.Timestamp),
        `Timestamp ${one!.body.Timestamp} then ${two!.body.Timestamp}`,
      );
      assert.ok(Number(header(two!.headers, 'webhook-timestamp')) > Number(header(one!.headers, 'webhook-timestamp')));
      done.Attempts.forEach((a, i) => {
        const sent = r.received[i]!;
        const seconds = Math.floor(Date.parse(a.StartedAtUtc) / 1000);
        assert.equal(
          Number(header(sent.headers, 'webhook-timestamp')),
          seconds,
          'webhook-timestamp is the attempt start',
        );
        assert.equal(
          Date.parse((JSON.parse(sent.body) as Body).Timestamp),
          Date.parse(a.StartedAtUtc),
          'Timestamp is the attempt start, to the millisecond',
        );
        // Each attempt is signed over its own bytes.
        new Webhook(secret).verify(sent.body, sent.headers as Record<string, string>);
      });
    });

    test('a connection reset is logged as ErrorKind "connection" and retried to success', async () => {
      const r = await receiver();
      r.answer = (_request, index) => (index === 0 ? 'reset' : { status: 200 });
      const { id } = await register(r.url);
      const deliveryId = await ping(id);
      const done = await settled(deliveryId, 'succeeded');
      assert.deepEqual(
        done.Attempts.map((a) => [a.ErrorKind, a.StatusCode]),
        [
          ['connection', null],
          [null, 200],
        ],
      );
      assert.equal(r.received.length, 2);
      assert.ok(r.received.every((d) => d.headers['x-service-delivery'] === deliveryId));
    });

    test('no answer within WEBHOOK_TIMEOUT is logged as ErrorKind "timeout" and retried to success', async () => {
      const r = await receiver();
      r.answer = (_request, index) => (index === 0 ? 'hang' : { status: 200 });
      const { id } = await register(r.url);
      const deliveryId = await ping(id);
      const done = await settled(deliveryId, 'succeeded', 20_000);
      assert.deepEqual(
        done.Attempts.map((a) => [a.ErrorKind, a.StatusCode]),
        [
          ['timeout', null],
          [null, 200],
        ],
      );
      assert.ok(
        done.Attempts[0]!.DurationMs >= 4900,
        `the attempt waited the whole 5 s timeout (${done.Attempts[0]!.DurationMs} ms)`,
      );
      assert.equal(r.received.length, 2);
    });

    test('a 3xx redirect is never followed and counts as a failed attempt (ErrorKind "redirect")', async () => {
      const r = await receiver();
      const paths: string[] = [];
      r.answer = (request) => {
        paths.push(`${request.method} ${request.url}`);
        return { status: 302, headers: { location: `${r.url}/elsewhere` } };
      };
      const { id } = await register(`${r.url}/hook`);
      const deliveryId = await ping(id);
      const done = await settled(deliveryId, 'failed');
      assert.equal(done.AttemptCount, 3);
      assert.deepEqual(
        done.Attempts.map((a) => [a.StatusCode, a.ErrorKind]),
        [
          [302, 'redirect'],
          [302, 'redirect'],
          [302, 'redirect'],
        ],
      );
      assert.match(done.Attempts[0]!.ErrorDetail ?? '', /elsewhere/);
      assert.equal(r.received.length, 3, 'exactly one request per attempt');
      assert.deepEqual(paths, ['POST /hook', 'POST /hook', 'POST /hook'], 'never a request to the Location');
      assert.ok(r.received.every((d) => d.headers['x-service-delivery'] === deliveryId));
    });

    test('a 304 is a failed attempt with ErrorKind "status", not a redirect', async () => {
      const r = await receiver();
      r.answer = () => ({ status: 304 });
      const { id } = await register(r.url);
      const done = await settled(await ping(id), 'failed');
      assert.deepEqual(
        done.Attempts.map((a) => [a.StatusCode, a.ErrorKind, a.ErrorDetail]),
        Array.from({ length: 3 }, () => [304, 'status', 'HTTP 304']),
      );
    });

    test('a reply body holding U+0000 is logged (as U+FFFD) with its one attempt, and the endpoints answered alongside it are recorded once', async () => {
      // Every receiver holds its answer until all have a request, so the outcomes finish together and
      // are recorded in one batch: PostgreSQL once refused the whole batch over the one NUL.
      const healthy = 5;
      const gate = Promise.withResolvers<void>();
      let arrived = 0;
      const answerTogether = (answer: { status: number; body: string }) => async () => {
        if (++arrived === healthy + 1) gate.resolve();
        await gate.promise;
        return answer;
      };
      const nul = await receiver();
      nul.answer = answerTogether({ status: 200, body: 'ok\u0000' });
      const fine = await Promise.all(Array.from({ length: healthy }, () => receiver()));
      for (const r of fine) r.answer = answerTogether({ status: 200, body: 'fine' });
      const endpoints = await Promise.all([nul, ...fine].map((r) => register(r.url)));
      const deliveries = await Promise.all(endpoints.map((e) => ping(e.id)));

      const [nulDone, ...fineDone] = await Promise.all(deliveries.map((d) => settled(d, 'succeeded')));
      assert.equal(nulDone!.AttemptCount, 1);
      assert.deepEqual(
        nulDone!.Attempts.map((a) => [a.StatusCode, a.ResponseExcerpt]),
        [[200, 'ok\uFFFD']],
      );
      for (const d of fineDone) {
        assert.equal(d.AttemptCount, 1, d.Id);
        assert.deepEqual(
          d.Attempts.map((a) => a.ResponseExcerpt),
          ['fine'],
        );
      }
      for (const r of [nul, ...fine]) assert.equal(r.received.length, 1, 'each delivered exactly once');
    });

    test('when every attempt of the schedule fails the delivery is "failed" after exactly 3 attempts and is not tried again', async () => {
      const r = await receiver();
      r.answer = () => ({ status: 500, body: 'broken' });
      const { id } = await register(r.url);
      const first = await ping(id);
      const done = await settled(first, 'failed');
      assert.equal(done.AttemptCount, 3);
      assert.deepEqual(
        done.Attempts.map((a) => [a.Attempt, a.StatusCode, a.ErrorKind]),
        [
          [1, 500, 'status'],
          [2, 500, 'status'],
          [3, 500, 'status'],
        ],
      );
      // A barrier instead of a sleep: a second delivery to the same endpoint runs its whole schedule, so
      // the dispatcher has been through many more claims since the first one failed.
      const second = await ping(id);
      await settled(second, 'failed');
      const again = await delivery(first);
      assert.equal(again.State, 'failed');
      assert.equal(again.AttemptCount, 3);
      assert.equal(again.Attempts.length, 3);
      assert.equal(r.received.filter((d) => d.headers['x-service-delivery'] === first).length, 3);
      assert.equal(r.received.length, 6);
      assert.equal(
        (await endpoint(id)).Enabled,
        true,
        'failing for less than WEBHOOK_DISABLE_AFTER keeps the endpoint enabled',
      );
    });

    test('410 Gone disables the endpoint at once (DisabledReason "gone") and records a webhook.endpoint.disabled event', async () => {
      const r = await receiver();
      r.answer = () => ({ status: 410 });
      const { id } = await register(r.url);
      const deliveryId = await ping(id);
      const done = await settled(deliveryId, 'failed');
      assert.equal(done.AttemptCount, 1, 'no retry after 410');
      const after = await endpoint(id);
      assert.equal(after.Enabled, false);
      assert.equal(after.DisabledReason, 'gone');
      let events: Awaited<ReturnType<typeof disabledEvents>> = [];
      await waitUntil(
        async () => (events = (await disabledEvents()).filter((e) => e.Data.EndpointId === id)).length === 1,
        5000,
        () => 'webhook.endpoint.disabled event',
      );
      assert.equal(events[0]!.Data.Reason, 'gone');
      assert.equal(events[0]!.Type, 'webhook.endpoint.disabled');
      expectStatus(
        await call(server.url, 'POST', `/api/webhooks/${id}/ping`, { token }),
        409,
        'a disabled endpoint gets nothing more',
      );
      assert.equal(r.received.length, 1);
    });

    test('an endpoint failing without a break for longer than WEBHOOK_DISABLE_AFTER is disabled (DisabledReason "failing") with an event', async () => {
      const r = await receiver();
      r.answer = () => ({ status: 500 });
      const { id } = await register(r.url);
      await settled(await ping(id), 'failed');
      const failing = await endpoint(id);
      assert.equal(failing.Enabled, true);
      assert.ok(failing.FailingSinceUtc, 'the run of failures started');

      // 60 s is the shortest WEBHOOK_DISABLE_AFTER: move the start of the run two minutes back instead of waiting.
      const since = new Date(Date.now() - 120_000);
      await server.app.database.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: toDbTime(since) })
        .where('id', '=', id)
        .execute();
      const next = await ping(id);
      const done = await settled(next, 'failed');
      assert.equal(done.AttemptCount, 1, 'disabling fails what waits for the endpoint');
      const disabled = await endpoint(id);
      assert.equal(disabled.Enabled, false);
      assert.equal(disabled.DisabledReason, 'failing');
      let events: Awaited<ReturnType<typeof disabledEvents>> = [];
      await waitUntil(
        async () => (events = (await disabledEvents()).filter((e) => e.Data.EndpointId === id)).length === 1,
        5000,
        () => 'webhook.endpoint.disabled event',
      );
      assert.equal(events[0]!.Data.Reason, 'failing');
      assert.equal(Date.parse(events[0]!.Data.FailingSinceUtc), since.getTime());
    });

    test('redeliver sends a finished delivery again with the same X-Service-Delivery; a pending one answers 409', async () => {
      const r = await receiver();
      const { id } = await register(r.url);
      const deliveryId = await ping(id);
      await settled(deliveryId, 'succeeded');
      const res = await call(server.url, 'POST', `/api/webhooks/deliveries/${deliveryId}/redeliver`, { token });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.json.Id, deliveryId);
      await r.waitFor(2);
      await waitUntil(
        async () => (await delivery(deliveryId)).Attempts.length === 2,
        5000,
        () => 'second attempt logged',
      );
      const done = await settled(deliveryId, 'succeeded');
      assert.deepEqual(
        done.Attempts.map((a) => [a.Attempt, a.StatusCode]),
        [
          [1, 200],
          [2, 200],
        ],
      );
      assert.deepEqual(
        r.received.map((d) => d.headers['x-service-delivery']),
        [deliveryId, deliveryId],
      );
      assert.equal(
        (JSON.parse(r.received[1]!.body) as Body).Id,
        (JSON.parse(r.received[0]!.body) as Body).Id,
        'the same event',
      );

      // A delivery waiting for its next attempt (Retry-After: an hour) is still pending: nothing to redeliver.
      const waiting = await receiver();
      waiting.answer = () => ({ status: 503, headers: { 'retry-after': '3600' } });
      const other = await register(waiting.url);
      const pendingId = await ping(other.id);
      await waitUntil(
        async () => (await delivery(pendingId)).AttemptCount === 1,
        5000,
        () => 'first attempt of the waiting delivery',
      );
      const pending = await delivery(pendingId);
      assert.equal(pending.State, 'pending');
      const refused = await call(server.url, 'POST', `/api/webhooks/deliveries/${pendingId}/redeliver`, { token });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(waiting.received.length, 1);
    });

    test('recover re-queues the failed deliveries of a fixed endpoint (202 Requeued n) and they all arrive', async () => {
      const r = await receiver();
      let broken = true;
      r.answer = () => (broken ? { status: 500 } : { status: 200 });
      const { id } = await register(r.url);
      const since = new Date(Date.now() - 1000).toISOString();
      const ids = [await ping(id), await ping(id), await ping(id)];
      for (const d of ids) await settled(d, 'failed');
      assert.ok((await endpoint(id)).FailingSinceUtc);

      broken = false;
      const before = r.received.length;
      const res = await call(server.url, 'POST', `/api/webhooks/${id}/recover`, { token, body: { Since: since } });
      assert.equal(res.status, 202, res.text);
      assert.deepEqual(res.json, { Requeued: 3 });
      for (const d of ids) assert.equal((await settled(d, 'succeeded')).AttemptCount, 4);
      const arrived = r.received.slice(before).map((d) => d.headers['x-service-delivery']);
      assert.deepEqual([...arrived].sort(), [...ids].sort());
      assert.equal((await endpoint(id)).FailingSinceUtc, null, 'a success ends the run of failures');
    });

    test('a slow endpoint never starves the others: its share of slots is capped while another endpoint is served', async () => {
      const slow = await receiver();
      slow.answer = () => 'hang';
      const fast = await receiver();
      const a = await register(slow.url);
      const b = await register(fast.url);
      // More deliveries to A than the dispatcher has slots (WEBHOOK_CONCURRENCY=8).
      const queued: string[] = [];
      for (let i = 0; i < 12; i++) queued.push(await ping(a.id));
      await slow.waitFor(2);
      const sent: string[] = [];
      for (let i = 0; i < 10; i++) sent.push(await ping(b.id));
      await fast.waitFor(10);

      // B got everything while A's first attempts are still hanging (they end at the 5 s timeout).
      assert.equal(slow.received.length, 2, 'A never has more than WEBHOOK_ENDPOINT_CONCURRENCY in flight');
      for (const d of queued)
        assert.equal((await delivery(d)).Attempts.length, 0, `${d} has not finished an attempt yet`);
      assert.deepEqual(fast.received.map((d) => d.headers['x-service-delivery']).sort(), [...sent].sort());
      // Stop delivering to A: deleting it removes its deliveries; closing the receiver ends the hung requests.
      expectStatus(await call(server.url, 'DELETE', `/api/webhooks/${a.id}`, { token }), 204);
    });

    test('two endpoints on one host are independent: requests to one never wait in a connection queue behind the other', async () => {
      const r = await receiver();
      r.answer = (request) => (request.url === '/slow' ? 'hang' : { status: 200 });
      const slow = await register(`${r.url}/slow`);
      const quick = await register(`${r.url}/quick`);
      const held = [await ping(slow.id), await ping(slow.id)];
      await waitUntil(
        () => r.received.length === 2,
        10_000,
        () => 'the slow endpoint has its share in flight',
      );
      const deliveryId = await ping(quick.id);
      const done = await settled(deliveryId, 'succeeded', 15_000);

      assert.deepEqual(
        done.Attempts.map((a) => [a.StatusCode, a.ErrorKind]),
        [[200, null]],
        'sent at once, not timed out in a queue',
      );
      for (const d of held) assert.equal((await delivery(d)).Attempts.length, 0, `${d} is still hanging`);
      expectStatus(await call(server.url, 'DELETE', `/api/webhooks/${slow.id}`, { token }), 204);
    });
  });

  describe(`webhook dispatcher shutdown [${dialect}]`, () => {
    test('closing the server while an attempt is in flight records its outcome and leaves no delivery leased', async () => {
      const database = await createTestDatabase(dialect);
      const r = await startDelayedReceiver(1000);
      let server: TestServer | undefined;
      try {
        server = await startServer(dialect, { ...ENV, DATABASE_URL: database.url });
        const token = await server.issuer.clientToken(WEBHOOK_SCOPES);
        const created = await registerEndpoint(server, token, r.url, ['webhook.ping']);
        const res = await call(server.url, 'POST', `/api/webhooks/${created.json.Id}/ping`, { token });
        expectStatus(res, 202);
        const deliveryId = res.json.Id as string;
        await waitUntil(
          () => r.received.length === 1,
          10_000,
          () => 'the attempt reached the receiver',
        );
        assert.equal(r.answered, 0, 'still in flight when the server closes');
        await server.close();
        server = undefined;

        const handle = openDatabase(database.url);
        try {
          const rows = await handle.db
            .selectFrom('webhook_deliveries')
            .select(['id', 'state', 'lease_owner', 'lease_until', 'attempt_count'])
            .execute();
          assert.deepEqual(
            rows.map((row) => ({ ...row, attempt_count: Number(row.attempt_count) })),
            [{ id: deliveryId, state: 'succeeded', lease_owner: null, lease_until: null, attempt_count: 1 }],
          );
          const attempts = await handle.db
            .selectFrom('webhook_attempts')
            .select(['delivery_id', 'status_code'])
            .execute();
          assert.deepEqual(
            attempts.map((a) => ({ ...a, status_code: Number(a.status_code) })),
            [{ delivery_id: deliveryId, status_code: 200 }],
          );
        } finally {
          await handle.db.destroy();
        }
      } finally {
        await server?.close();
        await r.close();
        await database.drop();
      }
    });
  });
}
