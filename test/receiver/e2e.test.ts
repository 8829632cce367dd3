// The receiver kit against the real producer: Signet with its built-in authorization server and its
// dispatcher (compressed retry schedule) delivering to a standalone receiver over real HTTP, on both
// dialects for both sides. Checks that every event reaches the consumer's handler exactly once, through
// an outage the retries cover, and through one they do not (then reconciliation from /api/events).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  Reconciler,
  startStandaloneReceiver,
  type ReceivedEvent,
  type StandaloneOptions,
} from '../../src/receiver/index.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { createTestDatabase, testDialects, type TestDatabase, type TestDialect } from '../helpers/databases.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { tokenRequest } from '../helpers/oauth-requests.ts';
import { LOCAL_WEBHOOKS_ENV, waitUntil, WEBHOOK_SCOPES } from '../helpers/webhook-receiver.ts';
import { expectStatus } from '../helpers/expect.ts';

type Receiver = Awaited<ReturnType<typeof startStandaloneReceiver>>;

interface Delivery {
  Id: string;
  EventId: string;
  EventType: string;
  State: 'pending' | 'succeeded' | 'failed';
  AttemptCount: number;
}

const WAIT_MS = 20_000;

/** A consumer's handler that remembers every event it ran for. */
function recorder() {
  const events: ReceivedEvent[] = [];
  return {
    events,
    handler: (event: ReceivedEvent) => void events.push(event),
    /** How often each event id was handled; every value must be 1. */
    counts: () => events.reduce((m, e) => m.set(e.id, (m.get(e.id) ?? 0) + 1), new Map<string, number>()),
    types: () => events.map((e) => e.type).sort(),
  };
}

function assertOncePerEvent(seen: ReturnType<typeof recorder>, eventIds: string[]): void {
  const counts = seen.counts();
  assert.deepEqual([...counts.keys()].sort(), [...eventIds].sort(), 'the handler saw exactly the producer’s events');
  for (const [id, count] of counts) assert.equal(count, 1, `event ${id} was handled ${count} times`);
}

for (const dialect of testDialects()) {
  describe(`receiver kit end to end with the real producer (${dialect})`, () => {
    /** Producer with a retry schedule; a client with every webhook scope; its token. */
    async function producer(schedule: string) {
      const server = await startAuthServer(dialect, { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: schedule });
      const client = await server.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: WEBHOOK_SCOPES.split(' '),
      });
      const issued = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: WEBHOOK_SCOPES },
        { basic: [client.clientId, client.clientSecret!] },
      );
      assert.equal(issued.status, 200, JSON.stringify(issued.body));
      return { server, token: String(issued.body.access_token) };
    }

    const cleanups: (() => Promise<void>)[] = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    });

    async function inboxDatabase(): Promise<TestDatabase> {
      const database = await createTestDatabase(dialect as TestDialect);
      cleanups.push(() => database.drop());
      return database;
    }

    async function receiverOn(options: Omit<StandaloneOptions, 'port'> & { port?: number }): Promise<Receiver> {
      const receiver = await startStandaloneReceiver({
        port: 0,
        host: '127.0.0.1',
        retryScheduleMs: [100, 200, 400],
        ...options,
      });
      cleanups.push(() => receiver.close());
      return receiver;
    }

    async function register(server: AuthTestServer, token: string, url: string, secret: string): Promise<string> {
      const result = await call(server.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: url, Events: ['*'], Secret: secret },
      });
      assert.equal(result.status, 201, result.text);
      return String(result.json.Id);
    }

    async function deliveries(server: AuthTestServer, token: string, endpointId: string): Promise<Delivery[]> {
      const result = await call(server.url, 'GET', `/api/webhooks/${endpointId}/deliveries?limit=100`, { token });
      assert.equal(result.status, 200, result.text);
      return result.json.Items as Delivery[];
    }

    /** created + paid (order A), created + deleted (order B): four events. */
    async function orderActivity(server: AuthTestServer, token: string): Promise<void> {
      const a = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 10 } });
      assert.equal(a.status, 201, a.text);
      expectStatus(await call(server.url, 'POST', `/api/orders/${a.json.Id}/pay`, { token }), 200);
      const b = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 20 } });
      assert.equal(b.status, 201, b.text);
      expectStatus(await call(server.url, 'DELETE', `/api/orders/${b.json.Id}`, { token }), 204);
    }

    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    let producerA: Awaited<ReturnType<typeof producer>>;
    before(async () => {
      producerA = await producer('0s,200ms,400ms');
      cleanups.push(() => producerA.server.close());
    });

    test('deliveries are accepted, and each event is processed exactly once', async () => {
      const { server, token } = producerA;
      const seen = recorder();
      const receiver = await receiverOn({
        sources: { orders: [secret] },
        database: (await inboxDatabase()).url,
        handler: seen.handler,
      });
      const endpointId = await register(server, token, `${receiver.url}/webhooks/orders`, secret);
      await orderActivity(server, token);

      await waitUntil(
        async () => (await deliveries(server, token, endpointId)).filter((d) => d.State === 'succeeded').length === 4,
        WAIT_MS,
        () => 'four succeeded deliveries',
      );
      await waitUntil(
        () => seen.events.length >= 4,
        WAIT_MS,
        () => `handled ${seen.events.length} of 4 events`,
      );
      await waitUntil(
        async () => (await receiver.inbox.list({ state: 'done' })).length === 4,
        WAIT_MS,
        () => 'four done inbox entries',
      );

      const log = await deliveries(server, token, endpointId);
      assert.deepEqual(seen.types(), ['order.created', 'order.created', 'order.deleted', 'order.paid']);
      assertOncePerEvent(
        seen,
        log.map((d) => d.EventId),
      );
      for (const event of seen.events) {
        const delivery = log.find((d) => d.EventId === event.id);
        assert.equal(event.deliveryId, delivery?.Id, 'the handler is told the delivery id');
        assert.equal(event.via, 'webhook');
        assert.equal(event.source, 'orders');
        assert.equal(event.type, delivery?.EventType);
      }
      assert.deepEqual(
        (await receiver.inbox.list()).map((e) => e.state),
        ['done', 'done', 'done', 'done'],
      );
      assert.ok(
        log.every((d) => d.AttemptCount === 1),
        'accepted at the first attempt',
      );
    });

    test('the receiver down for a while and back: retries deliver everything, processed exactly once', async () => {
      const { server, token } = await producer('0s,300ms,600ms,1s,2s,3s,5s');
      cleanups.push(() => server.close());
      const seen = recorder();
      const inbox = (await inboxDatabase()).url;
      const first = await receiverOn({ sources: { orders: [secret] }, database: inbox, handler: seen.handler });
      const port = Number(new URL(first.url).port);
      const endpointId = await register(server, token, `${first.url}/webhooks/orders`, secret);

      // One event while up, then an outage during which four more are produced.
      const early = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } });
      expectStatus(early, 201);
      await waitUntil(
        () => seen.events.length === 1,
        WAIT_MS,
        () => 'the first event handled',
      );
      await first.close();
      await orderActivity(server, token);
      await waitUntil(
        async () =>
          (await deliveries(server, token, endpointId)).filter((d) => d.State === 'pending' && d.AttemptCount >= 2)
            .length === 4,
        WAIT_MS,
        () => 'four deliveries failing and being retried',
      );

      const second = await receiverOn({ port, sources: { orders: [secret] }, database: inbox, handler: seen.handler });
      await waitUntil(
        async () => (await deliveries(server, token, endpointId)).every((d) => d.State === 'succeeded'),
        WAIT_MS,
        () => 'every delivery succeeded after the restart',
      );
      await waitUntil(
        () => seen.events.length >= 5,
        WAIT_MS,
        () => `handled ${seen.events.length} of 5 events`,
      );
      await waitUntil(
        async () => (await second.inbox.list({ state: 'done' })).length === 5,
        WAIT_MS,
        () => 'five done inbox entries',
      );

      const log = await deliveries(server, token, endpointId);
      assert.equal(log.length, 5);
      assertOncePerEvent(
        seen,
        log.map((d) => d.EventId),
      );
      assert.ok(log.filter((d) => d.AttemptCount > 1).length >= 4, 'the outage made the producer retry');
      assert.equal((await second.inbox.list()).length, 5, 'nothing recorded twice');
    });

    test('the receiver down past the retry window: reconciliation recovers every missing event exactly once', async () => {
      const { server, token } = producerA;
      const seen = recorder();
      const inbox = (await inboxDatabase()).url;
      const first = await receiverOn({ sources: { orders: [secret] }, database: inbox, handler: seen.handler });
      const port = Number(new URL(first.url).port);
      const endpointId = await register(server, token, `${first.url}/webhooks/orders`, secret);

      // Events before this endpoint existed (the earlier test's) are in /api/events too.
      const before = await call(server.url, 'GET', '/api/events?limit=100', { token });
      expectStatus(before, 200);
      const earlierEventIds = (before.json.Items as { Id: string }[]).map((e) => e.Id);

      const delivered = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 5 },
      });
      expectStatus(delivered, 201);
      await waitUntil(
        () => seen.events.length === 1,
        WAIT_MS,
        () => 'the first event handled',
      );
      await first.close();
      await orderActivity(server, token);
      await waitUntil(
        async () => (await deliveries(server, token, endpointId)).filter((d) => d.State === 'failed').length === 4,
        WAIT_MS,
        () => 'four deliveries failed for good',
      );

      // Back up, with a reader client of the producer (events:read only).
      const reader = await server.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['events:read'],
      });
      const second = await receiverOn({ port, sources: { orders: [secret] }, database: inbox, handler: seen.handler });
      const reconciler = new Reconciler({
        from: server.url,
        clientId: reader.clientId,
        clientSecret: reader.clientSecret!,
        source: 'orders',
        inbox: second.inbox,
        onEnqueued: () => second.worker.wake(),
      });
      const enqueued = await reconciler.runOnce();
      assert.equal(
        enqueued,
        earlierEventIds.length + 4,
        'every event not yet seen: the four missed ones and those from before the endpoint',
      );

      const all = await call(server.url, 'GET', '/api/events?limit=100', { token });
      const allIds = (all.json.Items as { Id: string }[]).map((e) => e.Id);
      await waitUntil(
        () => seen.events.length >= allIds.length,
        WAIT_MS,
        () => `handled ${seen.events.length} of ${allIds.length} events`,
      );
      await waitUntil(
        async () => (await second.inbox.list({ state: 'pending' })).length === 0,
        WAIT_MS,
        () => 'no pending inbox entries',
      );
      assertOncePerEvent(seen, allIds);
      const failedIds = (await deliveries(server, token, endpointId))
        .filter((d) => d.State === 'failed')
        .map((d) => d.EventId);
      for (const id of failedIds)
        assert.equal(
          seen.events.find((e) => e.id === id)?.via,
          'reconciliation',
          `${id} came back through reconciliation`,
        );
      assert.equal(seen.events[0]?.via, 'webhook', 'the event delivered before the outage is not enqueued again');

      assert.equal(await reconciler.runOnce(), 0, 'a second run finds nothing new');
      await reconciler.stop();
      assertOncePerEvent(seen, allIds);
      assert.equal((await second.inbox.list()).length, allIds.length);
    });
  });
}
