// The reconciler against a small fake producer on 127.0.0.1: discovery (RFC 9728, then OpenID
// Provider metadata), a client-credentials token sent as a bearer, paging by NextCursor, the cursor
// stored, and dedupe by event id against what webhooks already brought.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { closeWithin, listenOnLoopback, withDeadline } from '../helpers/deadline.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import { openInbox, Reconciler, type Inbox } from '../../src/receiver/index.ts';

const CLIENT_ID = 'reconciler client';
const CLIENT_SECRET = 's3cret:with/odd+chars';
const PAGE = 2; // the fake producer's own page size, smaller than the limit asked for

interface FakeProducer {
  url: string;
  events: { Id: string; Type: string; OccurredAtUtc: string; Data: unknown }[];
  tokensIssued: number;
  eventRequests: {
    authorization: string | undefined;
    after: string | null;
    limit: string | null;
    type: string | null;
  }[];
  tokenRequests: { form: URLSearchParams; authorization: string | undefined }[];
  close(): Promise<void>;
}

function addEvents(producer: FakeProducer, count: number, type = 'order.created'): string[] {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `evt_${producer.events.length + 1}`;
    producer.events.push({
      Id: id,
      Type: type,
      OccurredAtUtc: new Date().toISOString(),
      Data: { OrderId: producer.events.length + 1 },
    });
    ids.push(id);
  }
  return ids;
}

/** The request body, within 10 s: a client that stops sending fails the wait showing what came. */
function readBody(request: IncomingMessage): Promise<string> {
  let text = '';
  const ended = new Promise<string>((resolve, reject) => {
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => resolve(text));
    request.on('error', reject);
  });
  return withDeadline(
    ended,
    10_000,
    () => `the end of the ${request.method} ${request.url} body; read so far: ${text}`,
  );
}

/** One reconciliation pass, within 30 s; a stalled one fails naming the requests the fake producer saw. */
function pass(reconciler: Reconciler, producer: FakeProducer): Promise<number> {
  return withDeadline(
    reconciler.runOnce(),
    30_000,
    () =>
      `a reconciliation pass against ${producer.url}; token requests: ${producer.tokenRequests.length}, ` +
      `event requests: ${JSON.stringify(producer.eventRequests)}`,
  );
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id).replace(/%20/g, '+')}:${encodeURIComponent(secret).replace(/%20/g, '+')}`).toString('base64')}`;

async function startFakeProducer(): Promise<FakeProducer> {
  const producer: FakeProducer = {
    url: '',
    events: [],
    tokensIssued: 0,
    eventRequests: [],
    tokenRequests: [],
    close: async () => {},
  };
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', producer.url);
    const issuer = `${producer.url}/oauth`;
    if (url.pathname === '/.well-known/oauth-protected-resource')
      return json(res, 200, { resource: `${producer.url}/api`, authorization_servers: [issuer] });
    if (url.pathname === '/oauth/.well-known/openid-configuration')
      return json(res, 200, { issuer, token_endpoint: `${issuer}/token` });
    if (url.pathname === '/oauth/token' && req.method === 'POST') {
      const form = new URLSearchParams(await readBody(req));
      producer.tokenRequests.push({ form, authorization: req.headers.authorization });
      if (req.headers.authorization !== basic(CLIENT_ID, CLIENT_SECRET))
        return json(res, 401, { error: 'invalid_client' });
      if (form.get('grant_type') !== 'client_credentials') return json(res, 400, { error: 'unsupported_grant_type' });
      producer.tokensIssued += 1;
      return json(res, 200, {
        access_token: `token-${producer.tokensIssued}`,
        token_type: 'Bearer',
        expires_in: 900,
        scope: form.get('scope'),
      });
    }
    if (url.pathname === '/api/events') {
      const type = url.searchParams.get('type');
      producer.eventRequests.push({
        authorization: req.headers.authorization,
        after: url.searchParams.get('after'),
        limit: url.searchParams.get('limit'),
        type,
      });
      if (!req.headers.authorization?.startsWith('Bearer token-')) return json(res, 401, { title: 'no token' });
      const start = Number(url.searchParams.get('after')?.replace('c', '') ?? 0);
      // Like the real producer's `type=a,b`: only those types (positions here count the filtered list).
      const listed = type === null ? producer.events : producer.events.filter((e) => type.split(',').includes(e.Type));
      const items = listed
        .slice(start, start + PAGE)
        .map((e) => ({ ...e, _links: { self: { href: `${producer.url}/api/events/${e.Id}` } } }));
      // Like the real producer: NextCursor always names where to resume, even on an empty page.
      return json(res, 200, { Items: items, NextCursor: `c${start + items.length}` });
    }
    json(res, 404, { title: 'not found' });
  });
  producer.url = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  producer.close = () => {
    server.closeAllConnections();
    return closeWithin(server, `the fake producer at ${producer.url}`);
  };
  return producer;
}

for (const dialect of testDialects()) {
  describe(`reconciler on ${dialect}`, () => {
    let producer: FakeProducer;
    let database: TestDatabase;
    let inbox: Inbox;

    before(async () => {
      producer = await startFakeProducer();
      database = await createTestDatabase(dialect);
      inbox = await openInbox(database.url);
    });

    after(async () => {
      await inbox.close();
      await database.drop();
      await producer.close();
    });

    test('enqueues every event once, stores the cursor, and a second pass enqueues nothing', async () => {
      const ids = addEvents(producer, 5);
      let woken = 0;
      const reconciler = new Reconciler({
        from: `${producer.url}/`,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        source: 'orders',
        inbox,
        onEnqueued: () => (woken += 1),
      });
      assert.equal(await pass(reconciler, producer), 5);
      const entries = await inbox.list({ source: 'orders' });
      assert.deepEqual(
        entries.map((e) => e.eventId),
        ids,
      );
      assert.ok(
        entries.every((e) => e.via === 'reconciliation' && e.deliveryId === null && e.eventType === 'order.created'),
      );
      assert.deepEqual(JSON.parse(entries[0]!.body).Data, { OrderId: 1 });
      assert.equal(await inbox.getCursor('orders'), 'c5');
      assert.ok(woken > 0);

      const { form, authorization } = producer.tokenRequests[0]!;
      assert.equal(authorization, basic(CLIENT_ID, CLIENT_SECRET));
      assert.deepEqual(
        [form.get('grant_type'), form.get('scope'), form.get('resource')],
        ['client_credentials', 'events:read', `${producer.url}/api`],
      );
      assert.ok(producer.eventRequests.every((r) => r.authorization === 'Bearer token-1' && r.limit === '100'));
      assert.deepEqual(
        producer.eventRequests.map((r) => r.after),
        [null, 'c2', 'c4', 'c5'],
      );

      const before = producer.eventRequests.length;
      assert.equal(await pass(reconciler, producer), 0);
      assert.equal(producer.eventRequests[before]?.after, 'c5', 'the next pass resumes from the stored cursor');
      assert.equal(producer.tokensIssued, 1, 'the token is cached until shortly before it expires');
      assert.equal((await inbox.list({ source: 'orders' })).length, 5);
    });

    test('with `types`, asks the producer for those event types only', async () => {
      const own = await startFakeProducer(); // its own event list: the other tests count the shared one
      try {
        addEvents(own, 2, 'webhook.ping');
        const paid = addEvents(own, 3, 'order.paid');
        const reconciler = new Reconciler({
          from: own.url,
          clientId: CLIENT_ID,
          clientSecret: CLIENT_SECRET,
          source: 'typed',
          inbox,
          types: ['order.paid', 'order.deleted'],
        });
        assert.equal(await pass(reconciler, own), 3);
        assert.deepEqual(
          (await inbox.list({ source: 'typed' })).map((e) => e.eventId),
          paid,
        );
        assert.ok(
          own.eventRequests.length > 0 && own.eventRequests.every((r) => r.type === 'order.paid,order.deleted'),
        );
      } finally {
        await own.close();
      }
    });

    test('does not enqueue again an event that already arrived by webhook', async () => {
      const [byWebhook, missed] = addEvents(producer, 2);
      await inbox.record({
        source: 'orders',
        deliveryId: 'dlv_webhook',
        eventId: byWebhook!,
        eventType: 'order.created',
        body: '{}',
        via: 'webhook',
        receivedAt: new Date(),
      });
      const reconciler = new Reconciler({
        from: producer.url,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        source: 'orders',
        inbox,
      });
      assert.equal(await pass(reconciler, producer), 1);
      const entries = await inbox.list({ source: 'orders' });
      assert.equal(entries.filter((e) => e.eventId === byWebhook).length, 1);
      assert.equal(entries.find((e) => e.eventId === byWebhook)?.via, 'webhook');
      assert.equal(entries.find((e) => e.eventId === missed)?.via, 'reconciliation');
      assert.equal(await inbox.getCursor('orders'), 'c7');
    });

    test('fails the pass, enqueuing nothing, when the client credentials are refused', async () => {
      addEvents(producer, 1);
      const reconciler = new Reconciler({
        from: producer.url,
        clientId: CLIENT_ID,
        clientSecret: 'wrong',
        source: 'orders',
        inbox,
      });
      await assert.rejects(pass(reconciler, producer), /token endpoint answered 401 invalid_client/);
      assert.equal(await inbox.getCursor('orders'), 'c7');
    });

    test('start() reconciles in the background and stop() ends it', async () => {
      let woken = 0;
      const reconciler = new Reconciler({
        from: producer.url,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        source: 'orders',
        inbox,
        intervalMs: 20,
        onEnqueued: () => (woken += 1),
      });
      reconciler.start();
      await waitUntil(
        async () => (await inbox.getCursor('orders')) === 'c8',
        10_000,
        () => 'the background pass',
      );
      await withDeadline(reconciler.stop(), 10_000, 'the background reconciler to stop');
      assert.equal(woken, 1);
      assert.equal((await inbox.list({ source: 'orders' })).length, 8);
    });
  });
}
