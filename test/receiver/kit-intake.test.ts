// The rejection matrix through real HTTP, for the Fastify plugin and the node:http handler, on every
// test dialect: each request gets its documented status and a problem+json body, and the consumer's
// handler runs exactly once per accepted event and never for a rejected request.
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { withDeadline } from '../helpers/deadline.ts';
import { CALL_TIMEOUT_MS, fetchWithin } from '../helpers/http.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import { InboxWorker, openInbox, signBody, type Inbox } from '../../src/receiver/index.ts';
import {
  delivery,
  parseJsonText,
  post,
  recordingHandler,
  SECRET,
  startAdapter,
  type Adapter,
  type Answer,
  type Delivery,
  type RunningReceiver,
} from './kit-helpers.ts';
import { expectProblem, expectStatus, type ProblemChecks } from '../helpers/expect.ts';

const SIX_MINUTES = 6 * 60_000;

interface Case {
  name: string;
  status: number;
  problem: string;
  detail?: RegExp;
  /** Builds the request; what it returns is sent to /webhooks/orders unless `source` says otherwise. */
  build: () => { d: Delivery; body?: string | Buffer; headers?: Record<string, string>; source?: string };
}

function without(headers: Record<string, string>, name: string): Record<string, string> {
  const copy = { ...headers };
  delete copy[name];
  return copy;
}

function withHeader(d: Delivery, name: string, value: string): Record<string, string> {
  return { ...d.headers, [name]: value };
}

const REJECTIONS: Case[] = [
  {
    name: 'no signature',
    status: 401,
    problem: 'invalid-signature',
    detail: /missing/,
    build: () => {
      const d = delivery();
      return { d, headers: without(d.headers, 'x-service-signature-256') };
    },
  },
  {
    name: 'wrong secret',
    status: 401,
    problem: 'invalid-signature',
    detail: /mismatch/,
    build: () => ({ d: delivery({ secret: 'not-the-secret' }) }),
  },
  {
    name: 'uppercase hex',
    status: 401,
    problem: 'invalid-signature',
    detail: /malformed/,
    build: () => {
      const d = delivery();
      return {
        d,
        headers: withHeader(
          d,
          'x-service-signature-256',
          `sha256=${d.headers['x-service-signature-256']!.slice(7).toUpperCase()}`,
        ),
      };
    },
  },
  {
    name: 'sha1= prefix',
    status: 401,
    problem: 'invalid-signature',
    detail: /wrong prefix/,
    build: () => {
      const d = delivery();
      return {
        d,
        headers: withHeader(d, 'x-service-signature-256', `sha1=${d.headers['x-service-signature-256']!.slice(7, 47)}`),
      };
    },
  },
  {
    name: 'bare hex',
    status: 401,
    problem: 'invalid-signature',
    detail: /wrong prefix/,
    build: () => {
      const d = delivery();
      return { d, headers: withHeader(d, 'x-service-signature-256', d.headers['x-service-signature-256']!.slice(7)) };
    },
  },
  {
    name: 'truncated signature',
    status: 401,
    problem: 'invalid-signature',
    detail: /malformed/,
    build: () => {
      const d = delivery();
      return {
        d,
        headers: withHeader(d, 'x-service-signature-256', d.headers['x-service-signature-256']!.slice(0, -2)),
      };
    },
  },
  {
    name: 'body altered by one byte',
    status: 401,
    problem: 'invalid-signature',
    detail: /mismatch/,
    build: () => {
      const d = delivery({ data: { OrderId: 1 } });
      return { d, body: d.body.replace('"OrderId":1', '"OrderId":2') };
    },
  },
  {
    name: 'body re-serialized with other spacing',
    status: 401,
    problem: 'invalid-signature',
    detail: /mismatch/,
    build: () => {
      const d = delivery();
      return { d, body: JSON.stringify(JSON.parse(d.body), null, 2) };
    },
  },
  {
    name: 'missing delivery id',
    status: 400,
    problem: 'missing-delivery-id',
    build: () => {
      const d = delivery();
      return { d, headers: without(d.headers, 'x-service-delivery') };
    },
  },
  {
    name: 'empty delivery id',
    status: 400,
    problem: 'missing-delivery-id',
    build: () => {
      const d = delivery();
      return { d, headers: withHeader(d, 'x-service-delivery', '') };
    },
  },
  {
    name: 'missing event type',
    status: 400,
    problem: 'missing-event-type',
    build: () => {
      const d = delivery();
      return { d, headers: without(d.headers, 'x-service-event') };
    },
  },
  {
    name: 'empty event type',
    status: 400,
    problem: 'missing-event-type',
    build: () => {
      const d = delivery();
      return { d, headers: withHeader(d, 'x-service-event', '') };
    },
  },
  {
    name: 'stale timestamp (6 minutes old)',
    status: 401,
    problem: 'stale-timestamp',
    detail: /past/,
    build: () => ({ d: delivery({ timestamp: new Date(Date.now() - SIX_MINUTES) }) }),
  },
  {
    name: 'future timestamp (6 minutes ahead)',
    status: 401,
    problem: 'stale-timestamp',
    detail: /future/,
    build: () => ({ d: delivery({ timestamp: new Date(Date.now() + SIX_MINUTES) }) }),
  },
  {
    name: 'unknown source',
    status: 404,
    problem: 'unknown-source',
    build: () => ({ d: delivery(), source: 'nobody' }),
  },
  {
    name: 'source named like an Object.prototype member',
    status: 404,
    problem: 'unknown-source',
    build: () => ({ d: delivery(), source: 'constructor' }),
  },
  {
    name: 'signed body that is not an event',
    status: 400,
    problem: 'invalid-payload',
    build: () => {
      const d = delivery();
      const body = '{"Hello":"world"}';
      return { d, body, headers: withHeader(d, 'x-service-signature-256', signBody(body, SECRET)) };
    },
  },
  {
    name: 'event type header that disagrees with the signed body (relabelled delivery)',
    status: 400,
    problem: 'event-type-mismatch',
    detail: /order\.deleted.*order\.paid/,
    build: () => {
      const d = delivery({ type: 'order.paid' });
      return { d, headers: withHeader(d, 'x-service-event', 'order.deleted') };
    },
  },
  {
    name: 'signed body that is not UTF-8',
    status: 400,
    problem: 'invalid-payload',
    detail: /UTF-8/,
    build: () => {
      const d = delivery();
      const body = Buffer.from(d.body.replace('"OrderId":1', '"OrderId":"#"'));
      body[body.indexOf('#')] = 0xff;
      return { d, body, headers: withHeader(d, 'x-service-signature-256', signBody(body, SECRET)) };
    },
  },
  {
    name: 'body larger than the limit',
    status: 413,
    problem: 'payload-too-large',
    build: () => {
      const d = delivery({ data: { Pad: 'x'.repeat(5000) } });
      return { d };
    },
  },
];

/**
 * A POST with header lines exactly as given (fetch would join repeated ones into a single line), within
 * CALL_TIMEOUT_MS: a passed deadline fails saying how far the answer got, and destroys the request.
 */
function postRawHeaders(url: string, body: string, headers: [string, string][]): Promise<Answer> {
  let request: ClientRequest | undefined;
  let seen = 'no response yet';
  const answered = new Promise<Answer>((resolve, reject) => {
    // An array of header lines gets no Host added by Node (RFC 9112 §3.2 requires one).
    const lines = [['host', new URL(url).host], ...headers, ['content-length', String(Buffer.byteLength(body))]];
    request = httpRequest(url, { method: 'POST', headers: lines.flat() }, (response) => {
      const chunks: Buffer[] = [];
      const text = () => Buffer.concat(chunks).toString('utf8');
      seen = `status ${response.statusCode}, body so far: (none)`;
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        seen = `status ${response.statusCode}, body so far: ${text()}`;
      });
      response.on('error', reject);
      response.on('end', () => {
        try {
          const status = response.statusCode ?? 0;
          const json = parseJsonText(text(), `POST ${url} answered ${status}`);
          resolve({ status, contentType: response.headers['content-type'] ?? null, text: text(), json });
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    request.on('error', reject);
    request.end(body);
  });
  return withDeadline(answered, CALL_TIMEOUT_MS, () => `POST ${url} with raw header lines: ${seen}`).catch(
    (err: unknown) => {
      request?.destroy();
      throw err;
    },
  );
}

/** The checks of a case's problem beyond its status and type: the members, and its detail when the case names it. */
const problemOf = (expected: Case): ProblemChecks => ({ what: expected.name, members: true, detail: expected.detail });

for (const dialect of testDialects()) {
  for (const adapter of ['fastify', 'node'] as Adapter[]) {
    describe(`webhook intake through the ${adapter} adapter on ${dialect}`, () => {
      let database: TestDatabase;
      let inbox: Inbox;
      let worker: InboxWorker;
      let receiver: RunningReceiver;
      const seen = recordingHandler();
      const url = (source = 'orders') => `${receiver.url}/webhooks/${source}`;

      before(async () => {
        database = await createTestDatabase(dialect);
        inbox = await openInbox(database.url);
        worker = new InboxWorker({ inbox, handler: seen.handler, pollIntervalMs: 50 });
        worker.start();
        receiver = await startAdapter(adapter, {
          sources: { orders: ['newer-secret', SECRET], billing: ['billing-secret'] },
          inbox,
          worker,
          maxBodyBytes: 4096,
        });
      });

      after(async () => {
        await receiver.close();
        await worker.stop();
        await inbox.close();
        await database.drop();
      });

      test('accepts a signed delivery, answers 200 {"Received": true} and hands the event to the handler once', async () => {
        const d = delivery();
        const answer = await post(url(), d.body, d.headers);
        expectStatus(answer, 200);
        assert.deepEqual(answer.json, { Received: true });
        await waitUntil(
          () => seen.count(d.eventId) === 1,
          10_000,
          () => 'the handler to see the event',
        );
        const event = seen.events.find((e) => e.id === d.eventId)!;
        assert.equal(event.type, 'order.created');
        assert.equal(event.deliveryId, d.deliveryId);
        assert.equal(event.source, 'orders');
        assert.equal(event.via, 'webhook');
        assert.deepEqual(event.data, { OrderId: 1 });
      });

      test('rejects each bad request with its documented status and problem type, and never runs the handler for it', async () => {
        const rejectedIds: string[] = [];
        for (const c of REJECTIONS) {
          const { d, body, headers, source } = c.build();
          rejectedIds.push(d.eventId);
          expectProblem(
            await post(url(source), body ?? d.body, headers ?? d.headers),
            c.status,
            c.problem,
            problemOf(c),
          );
        }
        // A later accepted delivery proves the worker ran past anything a rejection could have queued.
        const sentinel = delivery();
        expectStatus(await post(url(), sentinel.body, sentinel.headers), 200);
        await waitUntil(
          () => seen.count(sentinel.eventId) === 1,
          10_000,
          () => 'the sentinel event',
        );
        for (const id of rejectedIds) assert.equal(seen.count(id), 0, `handler ran for rejected event ${id}`);
        assert.equal((await inbox.list()).filter((e) => rejectedIds.includes(e.eventId)).length, 0);
      });

      test('a validly signed delivery is accepted whatever its Content-Type says, even a malformed one', async () => {
        for (const contentType of [';;', 'text/plain', 'application/json; charset=utf-8']) {
          const d = delivery();
          const answer = await post(url(), d.body, withHeader(d, 'content-type', contentType));
          assert.equal(answer.status, 200, `${contentType}: ${JSON.stringify(answer.json)}`);
          assert.deepEqual(answer.json, { Received: true }, contentType);
          // The 200 is an acknowledgement: the event is in the inbox by then, under its ids, with the exact bytes.
          const stored = (await inbox.list()).filter((e) => e.eventId === d.eventId);
          assert.equal(stored.length, 1, `${contentType}: the event is in the inbox once`);
          assert.equal(stored[0]!.deliveryId, d.deliveryId, contentType);
          assert.equal(stored[0]!.body, d.body, contentType);
        }
      });

      test('a redelivery under the same delivery id gets 200 again and the handler still runs once', async () => {
        const d = delivery();
        const first = await post(url(), d.body, d.headers);
        const again = await post(url(), d.body, d.headers);
        assert.deepEqual([first.status, again.status], [200, 200]);
        assert.deepEqual(again.json, { Received: true, Duplicate: true });
        const sentinel = delivery();
        await post(url(), sentinel.body, sentinel.headers);
        await waitUntil(
          () => seen.count(sentinel.eventId) === 1,
          10_000,
          () => 'the sentinel event',
        );
        assert.equal(seen.count(d.eventId), 1);
      });

      test('the same event under a new delivery id is acknowledged and processed once', async () => {
        const d = delivery();
        const retried = delivery({ eventId: d.eventId });
        expectStatus(await post(url(), d.body, d.headers), 200);
        const answer = await post(url(), retried.body, retried.headers);
        expectStatus(answer, 200);
        assert.deepEqual(answer.json, { Received: true, Duplicate: true });
        const sentinel = delivery();
        await post(url(), sentinel.body, sentinel.headers);
        await waitUntil(
          () => seen.count(sentinel.eventId) === 1,
          10_000,
          () => 'the sentinel event',
        );
        assert.equal(seen.count(d.eventId), 1);
      });

      test('concurrent deliveries of one event record it once', async () => {
        const d = delivery();
        const answers = await Promise.all(Array.from({ length: 6 }, () => post(url(), d.body, d.headers)));
        assert.deepEqual(
          answers.map((a) => a.status),
          [200, 200, 200, 200, 200, 200],
        );
        assert.equal(answers.filter((a) => a.json?.Duplicate === true).length, 5);
        assert.equal((await inbox.list()).filter((e) => e.eventId === d.eventId).length, 1);
      });

      test('accepts a delivery signed with an older secret still in rotation, and checks each source with its own secrets', async () => {
        const d = delivery({ secret: 'newer-secret' });
        expectStatus(await post(url(), d.body, d.headers), 200);
        const billing = delivery({ secret: SECRET });
        expectProblem(await post(url('billing'), billing.body, billing.headers), 401, 'invalid-signature', {
          what: 'secret of another source',
          members: true,
          detail: /mismatch/,
        });
      });

      if (adapter === 'node') {
        test('answers 404 for other paths as problem+json', async () => {
          const other = await fetchWithin(`${receiver.url}/elsewhere`, { method: 'POST', body: '{}' });
          await expectStatus(other, 404);
          assert.match(other.headers.get('content-type') ?? '', /^application\/problem\+json/);
          const problem = parseJsonText(await other.text(), 'POST /elsewhere answered 404');
          assert.ok(String(problem?.type).endsWith('/not-found'), JSON.stringify(problem));
        });
      }

      test('answers 405 with Allow: POST for every other method on the webhook path, as problem+json', async () => {
        for (const method of ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
          const answer = await fetchWithin(url(), { method });
          const text = await answer.text();
          assert.equal(answer.status, 405, `${method}: ${text}`);
          assert.equal(answer.headers.get('allow'), 'POST', method);
          assert.match(answer.headers.get('content-type') ?? '', /^application\/problem\+json/, method);
          if (method !== 'HEAD') {
            const problem = parseJsonText(text, `${method} ${url()} answered ${answer.status}`);
            assert.ok(String(problem?.type).endsWith('/method-not-allowed'), `${method}: ${text}`);
          }
        }
      });

      test('a repeated delivery id, event type or signature header is refused, never glued into one value', async () => {
        for (const [name, extra, expected] of [
          ['x-service-delivery', 'dlv_other', 'repeated-header'],
          ['x-service-event', 'order.deleted', 'repeated-header'],
          ['x-service-signature-256', 'sha256=' + '0'.repeat(64), 'invalid-signature'],
        ] as const) {
          const d = delivery();
          const answer = await postRawHeaders(url(), d.body, [...Object.entries(d.headers), [name, extra]]);
          assert.equal(answer.status, expected === 'repeated-header' ? 400 : 401, `${name}: ${answer.text}`);
          assert.ok(String(answer.json?.type).endsWith(`/${expected}`), `${name}: ${answer.text}`);
          assert.match(String(answer.json?.detail), /more than once/, `${name}: ${answer.text}`);
          assert.equal(seen.count(d.eventId), 0, name);
        }
      });
    });
  }
}
