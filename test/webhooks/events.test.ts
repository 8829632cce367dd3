// Order changes become events: which change emits which type, that a refused change emits nothing,
// the envelope, the event list API (commit order, cursors that can be stored and resumed, filters,
// parameter errors), who sees which events, PostgreSQL's commit-order guarantee, and retention.
// Real HTTP and a real receiver; both dialects.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { toDbTime } from '../../src/db/codecs.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  WEBHOOK_SCOPES,
  type ReceivedDelivery,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';
import { expectStatus } from '../helpers/expect.ts';

const MERGE = 'application/merge-patch+json';
const OTHER_CUSTOMER = '9b2c1f00-7d3e-4a51-8c6f-1e2d3c4b5a69';
const DAY_MS = 86_400_000;
/** A bound on following rel=next links: a list that never ends fails instead of looping. */
const MAX_PAGES = 1000;

interface EventItem {
  Id: string;
  Type: string;
  OccurredAtUtc: string;
  Data: Record<string, unknown> & { Id?: number; CustomerId?: string; _links?: unknown };
  _links: { self: { href: string; method: string } };
}

function problemType(res: CallResult): string {
  return (
    String(res.json?.type ?? '')
      .split('/')
      .at(-1) ?? ''
  );
}

function withoutLinks(value: Record<string, unknown>): Record<string, unknown> {
  const { _links: _ignored, ...rest } = value;
  return rest;
}

const cursorOf = (payload: unknown) => Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');

for (const dialect of testDialects()) {
  describe(`webhook events [${dialect}]`, () => {
    let server: TestServer;
    let receiver: TestReceiver;
    let token: string;
    let endpointId: string;
    before(async () => {
      server = await startServer(dialect, LOCAL_WEBHOOKS_ENV);
      receiver = await startReceiver();
      token = await server.issuer.clientToken(WEBHOOK_SCOPES);
      endpointId = (await registerEndpoint(server, token, `${receiver.url}/all`, ['*'])).json.Id;
    });
    after(async () => {
      await receiver.close();
      await server.close();
    });

    const createOrder = async (customerId = CUSTOMER, total = 10, tok = token): Promise<CallResult> => {
      const res = await call(server.url, 'POST', '/api/orders', {
        token: tok,
        body: { CustomerId: customerId, Total: total },
      });
      assert.equal(res.status, 201, res.text);
      return res;
    };
    const act = async (id: number, action: string): Promise<CallResult> => {
      const res = await call(server.url, 'POST', `/api/orders/${id}/${action}`, { token });
      assert.equal(res.status, 200, `${action}: ${res.text}`);
      return res;
    };

    /** Every event after `after` visible to `tok`, following the next links; and where to resume. */
    async function readAll(
      after: string | undefined,
      tok = token,
      query = '',
    ): Promise<{ items: EventItem[]; cursor: string }> {
      const items: EventItem[] = [];
      let path = `/api/events?limit=500${after === undefined ? '' : `&after=${after}`}${query}`;
      for (let page = 1; ; page++) {
        // A next link on every page would loop for ever: no test here has this many events.
        assert.ok(page <= MAX_PAGES, `still a next link after ${MAX_PAGES} pages: ${path}`);
        const res = await call(server.url, 'GET', path, { token: tok });
        assert.equal(res.status, 200, res.text);
        items.push(...(res.json.Items as EventItem[]));
        const next = res.json._links.next as { href: string } | undefined;
        if (!next) return { items, cursor: res.json.NextCursor };
        path = next.href.slice(server.url.length);
      }
    }

    /** Polls until `condition` holds for the events after `after` (on PostgreSQL a commit can take a moment to be listed). */
    async function eventsAfter(
      after: string,
      condition: (items: EventItem[]) => boolean,
      tok = token,
    ): Promise<EventItem[]> {
      let items: EventItem[] = [];
      await waitUntil(
        async () => condition((items = (await readAll(after, tok)).items)),
        10_000,
        () => `events: ${JSON.stringify(items.map((e) => [e.Type, e.Data.Id]))}`,
      );
      return items;
    }

    /**
     * A cursor positioned after everything committed so far: creates a marker order and waits until
     * its event is listed (everything committed before it is then listed too).
     */
    async function syncedCursor(): Promise<string> {
      const marker = (await createOrder(CUSTOMER, 1)).json.Id as number;
      let cursor = '';
      await waitUntil(async () => {
        const page = await readAll(undefined);
        cursor = page.cursor;
        return page.items.some((e) => e.Type === 'order.created' && e.Data.Id === marker);
      }, 10_000);
      return cursor;
    }

    /** The deliveries the receiver got for these event ids, by event id. */
    async function receivedFor(eventIds: string[]): Promise<Map<string, ReceivedDelivery>> {
      const byEvent = () => new Map(receiver.received.map((d) => [JSON.parse(d.body).Id as string, d]));
      await waitUntil(
        () => eventIds.every((id) => byEvent().has(id)),
        10_000,
        () => `received ${receiver.received.length} deliveries`,
      );
      return byEvent();
    }

    test('each order change emits its event, listed at /api/events and delivered with X-Service-Event = Type', async () => {
      const start = await syncedCursor();
      const a = (await createOrder()).json.Id as number;
      const updated = await call(server.url, 'PATCH', `/api/orders/${a}`, {
        token,
        body: { Total: 12.5 },
        contentType: MERGE,
      });
      expectStatus(updated, 200);
      const states: Record<string, CallResult> = { 'order.updated': updated };
      states['order.paid'] = await act(a, 'pay');
      states['order.shipped'] = await act(a, 'ship');
      states['order.delivered'] = await act(a, 'deliver');
      const b = (await createOrder(OTHER_CUSTOMER, 3)).json.Id as number;
      const cancelled = await act(b, 'cancel');
      expectStatus(await call(server.url, 'DELETE', `/api/orders/${b}`, { token }), 204);

      const expected: [number, string][] = [
        [a, 'order.created'],
        [a, 'order.updated'],
        [a, 'order.paid'],
        [a, 'order.shipped'],
        [a, 'order.delivered'],
        [b, 'order.created'],
        [b, 'order.cancelled'],
        [b, 'order.deleted'],
      ];
      const events = await eventsAfter(start, (items) => items.length >= expected.length);
      assert.deepEqual(
        events.map((e) => [e.Data.Id, e.Type]),
        expected,
        'every change, once, in commit order',
      );
      for (const event of events.filter((e) => e.Data.Id === a && e.Type !== 'order.created')) {
        assert.deepEqual(
          withoutLinks(event.Data),
          withoutLinks(states[event.Type]!.json),
          `${event.Type}: Data is the order after the change`,
        );
      }
      assert.equal(events[1]!.Data.Total, 12.5);
      assert.deepEqual(
        [events[0]!.Data.Status, events[2]!.Data.Status, events[3]!.Data.Status, events[4]!.Data.Status],
        ['pending', 'paid', 'shipped', 'delivered'],
      );
      const deleted = events[7]!;
      assert.ok(!('_links' in deleted.Data), 'a deleted order has nothing left to link to');
      assert.deepEqual(deleted.Data, withoutLinks(cancelled.json), 'order.deleted carries the order as it was');

      const received = await receivedFor(events.map((e) => e.Id));
      for (const event of events) {
        const delivery = received.get(event.Id)!;
        const body = JSON.parse(delivery.body);
        assert.equal(delivery.headers['x-service-event'], event.Type);
        assert.equal(body.Type, event.Type);
        assert.deepEqual(body.Data, event.Data, `${event.Type}: the delivery carries the listed Data`);
        assert.equal(delivery.headers['content-type'], 'application/json');
      }
    });

    test('a PATCH that changes Total and pays emits order.updated then order.paid', async () => {
      const start = await syncedCursor();
      const id = (await createOrder()).json.Id as number;
      const res = await call(server.url, 'PATCH', `/api/orders/${id}`, {
        token,
        body: { Total: 20, Status: 'paid' },
        contentType: MERGE,
      });
      assert.equal(res.status, 200, res.text);
      const events = await eventsAfter(start, (items) => items.length >= 3);
      assert.deepEqual(
        events.map((e) => [e.Type, e.Data.Status, e.Data.Total]),
        [
          ['order.created', 'pending', 10],
          ['order.updated', 'paid', 20],
          ['order.paid', 'paid', 20],
        ],
      );
    });

    test('a refused change emits nothing; an Idempotency-Key replay emits no second event', async () => {
      const paid = (await createOrder()).json.Id as number;
      await act(paid, 'pay');
      const pending = await createOrder();
      const staleTag = pending.headers.get('etag')!;
      expectStatus(
        await call(server.url, 'PATCH', `/api/orders/${pending.json.Id}`, {
          token,
          body: { Total: 11 },
          contentType: MERGE,
        }),
        200,
      );
      const start = await syncedCursor();

      expectStatus(await call(server.url, 'POST', `/api/orders/${paid}/pay`, { token }), 409, 'paying a paid order');
      expectStatus(await call(server.url, 'POST', `/api/orders/${paid}/cancel`, { token }), 409);
      expectStatus(await call(server.url, 'DELETE', `/api/orders/${paid}`, { token }), 409);
      expectStatus(
        await call(server.url, 'PATCH', `/api/orders/${paid}`, { token, body: { Total: 99 }, contentType: MERGE }),
        409,
      );
      const stale = await call(server.url, 'PATCH', `/api/orders/${pending.json.Id}`, {
        token,
        body: { Total: 13 },
        contentType: MERGE,
        headers: { 'if-match': staleTag },
      });
      expectStatus(stale, 412, 'a stale If-Match');
      expectStatus(
        await call(server.url, 'POST', `/api/orders/${pending.json.Id}/pay`, {
          token,
          headers: { 'if-match': staleTag },
        }),
        412,
      );
      expectStatus(
        await call(server.url, 'DELETE', `/api/orders/${pending.json.Id}`, {
          token,
          headers: { 'if-match': staleTag },
        }),
        412,
      );
      expectStatus(
        await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: -1 } }),
        422,
      );
      const unchanged = await call(server.url, 'PATCH', `/api/orders/${pending.json.Id}`, {
        token,
        body: { Total: 11 },
        contentType: MERGE,
      });
      expectStatus(unchanged, 200, 'a PATCH that changes nothing');

      const key = randomUUID();
      const body = { CustomerId: CUSTOMER, Total: 7 };
      const first = await call(server.url, 'POST', '/api/orders', { token, body, headers: { 'idempotency-key': key } });
      const replay = await call(server.url, 'POST', '/api/orders', {
        token,
        body,
        headers: { 'idempotency-key': key },
      });
      expectStatus(first, 201);
      expectStatus(replay, 201);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.json.Id, first.json.Id);

      const marker = (await createOrder(CUSTOMER, 2)).json.Id as number;
      const events = await eventsAfter(start, (items) => items.some((e) => e.Data.Id === marker));
      assert.deepEqual(
        events.map((e) => [e.Type, e.Data.Id]),
        [
          ['order.created', first.json.Id],
          ['order.created', marker],
        ],
        'only the one real create and the marker',
      );
    });

    test('the envelope: evt_ Id, Type, OccurredAtUtc and Data as GET /api/orders/{id} shows the order; the delivery body matches', async () => {
      const start = await syncedCursor();
      const created = await createOrder(CUSTOMER, 42.5);
      const order = await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token });
      const [event] = await eventsAfter(start, (items) => items.length >= 1);
      assert.match(event!.Id, /^evt_[0-9a-f]{32}$/);
      assert.equal(event!.Type, 'order.created');
      assert.equal(event!.OccurredAtUtc, order.json.CreatedAtUtc, 'the event happened when the order was created');
      for (const member of ['Id', 'Status', 'Total', 'Currency', 'CustomerId', 'CreatedAtUtc', 'UpdatedAtUtc'])
        assert.deepEqual(event!.Data[member], order.json[member], member);
      assert.deepEqual(withoutLinks(event!.Data), withoutLinks(order.json), 'every member of the order');
      assert.match(
        String((event!.Data._links as { self: { href: string } }).self.href),
        new RegExp(`/api/orders/${created.json.Id}$`),
      );
      assert.deepEqual(event!._links, { self: { href: `${server.url}/api/events/${event!.Id}`, method: 'GET' } });

      const one = await call(server.url, 'GET', `/api/events/${event!.Id}`, { token });
      expectStatus(one, 200);
      assert.deepEqual(one.json, event, 'GET /api/events/{id} shows the listed event');

      const delivery = (await receivedFor([event!.Id])).get(event!.Id)!;
      const body = JSON.parse(delivery.body);
      assert.deepEqual(Object.keys(body), ['Id', 'Type', 'OccurredAtUtc', 'Timestamp', 'Data']);
      assert.deepEqual(
        { Id: body.Id, Type: body.Type, OccurredAtUtc: body.OccurredAtUtc, Data: body.Data },
        { Id: event!.Id, Type: event!.Type, OccurredAtUtc: event!.OccurredAtUtc, Data: event!.Data },
      );
      assert.match(body.Timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'the attempt time, in milliseconds');
      assert.equal(
        delivery.headers['webhook-timestamp'],
        String(Math.floor(Date.parse(body.Timestamp) / 1000)),
        'the signed timestamp is the body one, in whole seconds',
      );
      assert.ok(Date.parse(body.Timestamp) >= Date.parse(body.OccurredAtUtc), 'never before the event');
    });

    test('the list pages with limit and rel=next in commit order, each event once; a stored NextCursor resumes later', async () => {
      const start = await syncedCursor();
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push((await createOrder(CUSTOMER, i + 1)).json.Id);
      await eventsAfter(start, (items) => items.length >= 5);

      const seen: EventItem[] = [];
      const sizes: number[] = [];
      let path = `/api/events?after=${start}&limit=2`;
      let last: CallResult;
      for (let page = 1; ; page++) {
        assert.ok(page <= MAX_PAGES, `still a next link after ${MAX_PAGES} pages of 2: ${path}`);
        last = await call(server.url, 'GET', path, { token });
        expectStatus(last, 200);
        assert.equal(last.headers.get('cache-control'), 'private, no-cache');
        seen.push(...last.json.Items);
        sizes.push(last.json.Items.length);
        const next = last.json._links.next;
        if (!next) {
          assert.equal(last.headers.get('link'), null, 'no Link header on the last page');
          break;
        }
        assert.equal(last.headers.get('link'), `<${next.href}>; rel="next"`);
        assert.equal(
          new URL(next.href).searchParams.get('after'),
          last.json.NextCursor,
          'the next link continues from NextCursor',
        );
        assert.equal(new URL(next.href).searchParams.get('limit'), '2', 'and keeps the query');
        path = next.href.slice(server.url.length);
      }
      assert.deepEqual(sizes, [2, 2, 1]);
      assert.deepEqual(
        seen.map((e) => e.Data.Id),
        ids,
        'every event exactly once, in creation order',
      );
      assert.equal(new Set(seen.map((e) => e.Id)).size, 5);

      const stored = last.json.NextCursor as string;
      const empty = await call(server.url, 'GET', `/api/events?after=${stored}`, { token });
      assert.deepEqual(empty.json.Items, [], 'nothing after the end yet');
      assert.equal(empty.json.NextCursor, stored, 'an empty page hands back the same position');
      assert.equal(empty.json._links.next, undefined);

      const later = [(await createOrder(CUSTOMER, 8)).json.Id, (await createOrder(CUSTOMER, 9)).json.Id];
      const resumed = await eventsAfter(stored, (items) => items.length >= 2);
      assert.deepEqual(
        resumed.map((e) => e.Data.Id),
        later,
        'the stored cursor returns exactly what came later',
      );
    });

    test('type filters by a comma list of event types; unknown types are a 400', async () => {
      const start = await syncedCursor();
      const a = (await createOrder()).json.Id as number;
      await act(a, 'pay');
      const b = (await createOrder()).json.Id as number;
      await act(b, 'cancel');
      await eventsAfter(start, (items) => items.length >= 4);
      const filtered = async (type: string) =>
        (await readAll(start, token, `&type=${encodeURIComponent(type)}`)).items.map((e) => [e.Type, e.Data.Id]);
      assert.deepEqual(await filtered('order.paid,order.cancelled'), [
        ['order.paid', a],
        ['order.cancelled', b],
      ]);
      assert.deepEqual(
        await filtered(' order.cancelled , order.paid '),
        [
          ['order.paid', a],
          ['order.cancelled', b],
        ],
        'spaces around the names are fine',
      );
      assert.deepEqual(await filtered('order.paid'), [['order.paid', a]]);
      assert.deepEqual(await filtered('order.shipped'), []);
      assert.equal((await filtered('*')).length, 4);

      for (const type of ['order.exploded', 'order.paid,nope', '', ',', 'ORDER.PAID']) {
        const res = await call(server.url, 'GET', `/api/events?type=${encodeURIComponent(type)}`, { token });
        expectStatus(res, 400, `type=${type}`);
        assert.equal(problemType(res), 'invalid-parameter');
        assert.equal(res.json.errors[0].pointer, '/type');
      }
    });

    test('a malformed after or an out-of-range limit is a 400 problem', async () => {
      const cursors = [
        'not a cursor!',
        'AAAA',
        cursorOf({ t: 'abc', s: 1 }),
        cursorOf({ t: '1', s: 1.5 }),
        cursorOf({ t: '1', s: '2' }),
        cursorOf({ t: '1' }),
        cursorOf({ t: '1', s: 1, x: 0 }),
        cursorOf([1, 2]),
        cursorOf({ t: '123456789012345678901', s: 1 }),
        'a'.repeat(600),
      ];
      for (const after of cursors) {
        const res = await call(server.url, 'GET', `/api/events?after=${encodeURIComponent(after)}`, { token });
        assert.equal(res.status, 400, `after=${after}: ${res.text}`);
        assert.equal(problemType(res), 'invalid-parameter');
      }
      const good = await call(server.url, 'GET', `/api/events?after=${cursorOf({ t: '0', s: 0 })}`, { token });
      expectStatus(good, 200, 'the start position is a valid cursor');
      for (const limit of ['0', '501', '-1', 'ten', '1.5']) {
        const res = await call(server.url, 'GET', `/api/events?limit=${limit}`, { token });
        expectStatus(res, 400, `limit=${limit}`);
        assert.equal(problemType(res), 'invalid-parameter');
      }
      for (const limit of ['1', '500'])
        expectStatus(await call(server.url, 'GET', `/api/events?limit=${limit}`, { token }), 200, `limit=${limit}`);
      assert.equal((await call(server.url, 'GET', '/api/events?limit=1', { token })).json.Items.length, 1);
    });

    test('GET /api/events/{id}: 200 for an event, 404 for an unknown id, 400 for a malformed one', async () => {
      const start = await syncedCursor();
      await createOrder();
      const [event] = await eventsAfter(start, (items) => items.length >= 1);
      const res = await call(server.url, 'GET', `/api/events/${event!.Id}`, { token });
      expectStatus(res, 200);
      assert.equal(res.json.Id, event!.Id);
      const unknown = await call(server.url, 'GET', `/api/events/evt_${'0'.repeat(32)}`, { token });
      expectStatus(unknown, 404);
      assert.equal(problemType(unknown), 'not-found');
      for (const id of ['evt_123', `EVT_${'0'.repeat(32)}`, `evt_${'G'.repeat(32)}`, '42', `dlv_${'0'.repeat(32)}`]) {
        const bad = await call(server.url, 'GET', `/api/events/${id}`, { token });
        expectStatus(bad, 400, id);
        assert.equal(problemType(bad), 'invalid-parameter');
      }
      const noScope = await server.issuer.clientToken('orders:read');
      expectStatus(await call(server.url, 'GET', `/api/events/${event!.Id}`, { token: noScope }), 403);
      expectStatus(await call(server.url, 'GET', '/api/events', { token: noScope }), 403);
      expectStatus(await call(server.url, 'GET', '/api/events'), 401);
    });

    test("clients see order events but not another client's endpoint events; an end user sees only their own orders' events", async () => {
      const start = await syncedCursor();
      const pinged = await call(server.url, 'POST', `/api/webhooks/${endpointId}/ping`, { token });
      expectStatus(pinged, 202);
      const pingEvent = pinged.json.EventId as string;
      const mine = (await createOrder(CUSTOMER)).json.Id as number;
      const theirs = (await createOrder(OTHER_CUSTOMER)).json.Id as number;
      // The end users' own client (spa-client) has an endpoint too: its events are the client's, not theirs.
      const spaClient = await server.issuer.clientToken(WEBHOOK_SCOPES, 'spa-client');
      const spaEndpoint = await registerEndpoint(server, spaClient, `${receiver.url}/spa`, ['order.deleted']);
      const spaPing = (
        await call(server.url, 'POST', `/api/webhooks/${spaEndpoint.json.Id}/ping`, { token: spaClient })
      ).json.EventId as string;
      const marker = (await createOrder(OTHER_CUSTOMER, 3)).json.Id as number;

      const forOwner = await eventsAfter(start, (items) => items.some((e) => e.Data.Id === marker));
      assert.deepEqual(
        forOwner.map((e) => e.Type),
        ['webhook.ping', 'order.created', 'order.created', 'order.created'],
        'the owner sees its ping and every order event',
      );
      assert.equal(forOwner[0]!.Id, pingEvent);
      assert.deepEqual(forOwner[0]!.Data, { EndpointId: endpointId, Url: `${receiver.url}/all` });
      expectStatus(await call(server.url, 'GET', `/api/events/${spaPing}`, { token }), 404, "another client's ping");

      const other = await server.issuer.clientToken('events:read', 'other-client');
      const forOther = await eventsAfter(start, (items) => items.some((e) => e.Data.Id === marker), other);
      assert.deepEqual(
        forOther.map((e) => [e.Type, e.Data.Id]),
        [
          ['order.created', mine],
          ['order.created', theirs],
          ['order.created', marker],
        ],
        'order events, no pings of other clients',
      );
      expectStatus(await call(server.url, 'GET', `/api/events/${pingEvent}`, { token: other }), 404);
      expectStatus(await call(server.url, 'GET', `/api/events/${forOther[0]!.Id}`, { token: other }), 200);

      const user = await server.issuer.userToken('events:read', CUSTOMER);
      const forUser = (await readAll(start, user)).items;
      assert.deepEqual(
        forUser.map((e) => [e.Type, e.Data.Id]),
        [['order.created', mine]],
        "only the events of the user's own orders",
      );
      const sameUserUpperCase = await server.issuer.userToken('events:read', CUSTOMER.toUpperCase());
      assert.deepEqual(
        (await readAll(start, sameUserUpperCase)).items.map((e) => e.Id),
        forUser.map((e) => e.Id),
        'customer ids compare case-insensitively',
      );
      for (const id of [forOther[1]!.Id, pingEvent, spaPing])
        expectStatus(await call(server.url, 'GET', `/api/events/${id}`, { token: user }), 404, id);
      expectStatus(await call(server.url, 'GET', `/api/events/${forUser[0]!.Id}`, { token: user }), 200);
      assert.equal(
        (
          await call(server.url, 'GET', '/api/events', {
            token: await server.issuer.userToken('orders:read', CUSTOMER),
          })
        ).status,
        403,
        'events:read is needed',
      );
    });

    if (dialect === 'postgres') {
      test('PostgreSQL: an event committed after an earlier, still open transaction is not listed before it', async () => {
        const start = await syncedCursor();
        const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
          server.app.database.db,
        );
        const slow = new pg.Client({ connectionString: server.databaseUrl });
        await slow.connect();
        const slowId = `evt_${randomBytes(16).toString('hex')}`;
        let fastId: string;
        let storedCursor: string;
        try {
          await slow.query(`set search_path to ${rows[0]!.schema}`);
          await slow.query('begin');
          await slow.query(
            `insert into webhook_events (id, type, occurred_at, data, owner, customer_id) values ($1, 'order.created', now(), '{}', null, null)`,
            [slowId],
          );

          const order = (await createOrder()).json.Id as number;
          fastId = (
            await server.app.database.db
              .selectFrom('webhook_events')
              .select('id')
              .where('order_id', '=', order)
              .executeTakeFirstOrThrow()
          ).id;
          expectStatus(
            await call(server.url, 'GET', `/api/events/${fastId}`, { token }),
            200,
            'the later event is committed',
          );
          const during = await readAll(start);
          assert.ok(
            !during.items.some((e) => e.Id === fastId),
            'not listed while an earlier transaction is still open',
          );
          assert.ok(!during.items.some((e) => e.Id === slowId));
          storedCursor = during.cursor;
          await slow.query('commit');
        } catch (err) {
          await slow.query('rollback').catch(() => {});
          throw err;
        } finally {
          await slow.end();
        }

        const all = await eventsAfter(start, (items) => items.some((e) => e.Id === fastId));
        const ids = all.map((e) => e.Id);
        assert.ok(ids.includes(slowId), 'the slow event is listed once committed');
        assert.ok(ids.indexOf(slowId) < ids.indexOf(fastId), 'in commit-safe order: the earlier transaction first');
        const resumed = await eventsAfter(storedCursor, (items) => items.some((e) => e.Id === fastId));
        assert.deepEqual(
          resumed.map((e) => e.Id),
          [slowId, fastId],
          'a reader holding the cursor from before the commit still gets the slow event',
        );
      });
    }

    test('purgeExpiredEvents deletes events older than EVENT_RETENTION with their deliveries, unless a delivery still waits', async () => {
      const db = server.app.database.db;
      const start = await syncedCursor();
      const oldOrder = (await createOrder()).json.Id as number;
      const newOrder = (await createOrder()).json.Id as number;
      const [oldEvent, newEvent] = await eventsAfter(start, (items) => items.length >= 2);
      assert.equal(oldEvent!.Data.Id, oldOrder);
      assert.equal(newEvent!.Data.Id, newOrder);
      const deliveryOf = async (eventId: string) =>
        db.selectFrom('webhook_deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirst();
      await waitUntil(
        async () => (await deliveryOf(oldEvent!.Id))?.state === 'succeeded',
        10_000,
        () => 'the old event is still being delivered',
      );
      const oldDelivery = (await deliveryOf(oldEvent!.Id))!;
      const longAgo = toDbTime(new Date(Date.now() - 40 * DAY_MS));
      await db.updateTable('webhook_events').set({ occurred_at: longAgo }).where('id', '=', oldEvent!.Id).execute();

      // An old event whose delivery still waits for a retry is kept until it is settled.
      const waitingId = `evt_${randomBytes(16).toString('hex')}`;
      await db
        .insertInto('webhook_events')
        .values({
          id: waitingId,
          type: 'order.created',
          occurred_at: longAgo,
          data: '{}',
          owner: null,
          customer_id: null,
          order_id: null,
        })
        .execute();
      const future = toDbTime(new Date(Date.now() + DAY_MS));
      await db
        .insertInto('webhook_deliveries')
        .values({
          id: `dlv_${randomBytes(16).toString('hex')}`,
          event_id: waitingId,
          endpoint_id: endpointId,
          state: 'pending',
          attempt_count: 1,
          retry_index: 1,
          next_attempt_at: future,
          lease_owner: null,
          lease_until: null,
          last_status_code: 500,
          last_error: 'HTTP 500',
          created_at: longAgo,
          updated_at: longAgo,
        })
        .execute();

      assert.equal(await server.app.webhooks.dispatcher!.purgeExpiredEvents(), 1);
      expectStatus(
        await call(server.url, 'GET', `/api/events/${oldEvent!.Id}`, { token }),
        404,
        'the expired event is gone',
      );
      expectStatus(await call(server.url, 'GET', `/api/events/${newEvent!.Id}`, { token }), 200, 'a newer event stays');
      expectStatus(
        await call(server.url, 'GET', `/api/events/${waitingId}`, { token }),
        200,
        'an event with a waiting delivery stays',
      );
      expectStatus(
        await call(server.url, 'GET', `/api/webhooks/deliveries/${oldDelivery.id}`, { token }),
        404,
        'its delivery log went with it',
      );
      assert.equal(
        (await db.selectFrom('webhook_attempts').select('id').where('delivery_id', '=', oldDelivery.id).execute())
          .length,
        0,
        'and its attempts',
      );
      const listed = (await readAll(start)).items.map((e) => e.Id);
      assert.ok(!listed.includes(oldEvent!.Id));
      assert.ok(listed.includes(newEvent!.Id));
      assert.equal(await server.app.webhooks.dispatcher!.purgeExpiredEvents(), 0, 'nothing more to purge');
    });
  });
}
