// The operators' event browser across all clients (docs/guides/admin-api.md, Events): newest first in
// cursor pages without duplicates or gaps, filtered by type, order and time, each event with its
// deliveries counted by state; one event by id; 404 for an unknown one and 400 for a bad filter.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { allPages, call, callExpecting } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const ENV = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s' };
const ORDERS = 3;

interface AdminEvent {
  Id: string;
  Type: string;
  OccurredAtUtc: string;
  ClientId: string | null;
  OrderId: number | null;
  Deliveries: { Pending: number; Succeeded: number; Failed: number };
  _links: Record<string, { href: string; method: string }>;
}

for (const dialect of testDialects()) {
  describe(`admin API: event browser [${dialect}]`, () => {
    let server: TestServer;
    let receiver: TestReceiver;
    let admin: string;
    let started: string;
    const orderIds: number[] = [];
    const pings: string[] = [];

    const get = async (path: string, what = path) =>
      (await callExpecting(server.url, 'GET', path, 200, { token: admin }, what)).json;
    /** Every page of a list, following `_links.next`. */
    const all = (path: string) => allPages<AdminEvent>(server.url, path, admin);

    before(async () => {
      server = await startServer(dialect, ENV);
      receiver = await startReceiver();
      receiver.answer = (request) => ({ status: request.url?.endsWith('/down') ? 500 : 200 });
      started = new Date(Date.now() - 1000).toISOString();
      const alpha = await server.issuer.clientToken('webhooks:manage orders:write', 'client-alpha');
      const beta = await server.issuer.clientToken('webhooks:manage', 'client-beta');
      admin = await server.issuer.clientToken('admin:read admin:write', 'ops-bot');
      await registerEndpoint(server, alpha, `${receiver.url}/ok`, ['*']);
      await registerEndpoint(server, alpha, `${receiver.url}/down`, ['order.created']);
      const betaEndpoint = (await registerEndpoint(server, beta, `${receiver.url}/ok`, ['webhook.ping'])).json.Id;
      for (let i = 0; i < ORDERS; i++) {
        const created = await call(server.url, 'POST', '/api/orders', {
          token: alpha,
          body: { CustomerId: randomUUID(), Total: 10 + i },
        });
        expectStatus(created, 201, 'create an order');
        orderIds.push(created.json.Id);
      }
      const ping = await call(server.url, 'POST', `/api/webhooks/${betaEndpoint}/ping`, { token: beta });
      expectStatus(ping, 202, 'ping');
      pings.push(ping.json.EventId);
      let pending = -1;
      await waitUntil(
        async () => {
          const events = (await all('/api/admin/events?limit=100')).items;
          pending = events.reduce((n, e) => n + e.Deliveries.Pending, 0);
          return pending === 0;
        },
        20_000,
        () => `deliveries still pending: ${pending}`,
      );
    });
    after(async () => {
      await receiver.close();
      await server.close();
    });

    test('pages through every client’s events newest first, without duplicates or gaps', async () => {
      const whole = (await all('/api/admin/events?limit=100')).items;
      const { items, pages } = await all('/api/admin/events?limit=2');
      assert.equal(pages, Math.ceil(whole.length / 2));
      assert.deepEqual(
        items.map((e) => e.Id),
        whole.map((e) => e.Id),
      );
      assert.equal(new Set(items.map((e) => e.Id)).size, items.length, 'no duplicates');
      const times = items.map((e) => e.OccurredAtUtc);
      assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
      const ping = items.find((e) => e.Id === pings[0]);
      assert.equal(ping?.ClientId, 'client-beta', JSON.stringify(ping));
      assert.equal(ping?._links.self!.href, `${server.url}/api/admin/events/${pings[0]}`);
    });

    test('each event carries its deliveries by state, and links to them in the delivery log', async () => {
      const created = (await all('/api/admin/events?type=order.created')).items;
      assert.equal(created.length, ORDERS, JSON.stringify(created));
      for (const event of created) {
        // Two of client-alpha's endpoints take order.created: /ok succeeds, /down fails for good.
        assert.deepEqual(event.Deliveries, { Pending: 0, Succeeded: 1, Failed: 1 }, JSON.stringify(event));
        assert.equal(event.ClientId, null);
        const linked = await get(
          new URL(event._links.deliveries!.href).pathname + new URL(event._links.deliveries!.href).search,
        );
        assert.deepEqual(
          linked.Items.map((d: { State: string }) => d.State).sort(),
          ['failed', 'succeeded'],
          JSON.stringify(linked),
        );
      }
      const one = await get(`/api/admin/events/${created[0]!.Id}`);
      assert.deepEqual(one.Deliveries, created[0]!.Deliveries);
      assert.equal(one.Data.Id, one.OrderId, JSON.stringify(one));
    });

    test('filters by type, order and time', async () => {
      const ids = async (query: string) => (await all(`/api/admin/events?limit=2&${query}`)).items;
      assert.deepEqual(
        (await ids('type=webhook.ping')).map((e) => e.Id),
        pings,
      );
      const both = await ids('type=webhook.ping,order.created');
      assert.equal(both.length, ORDERS + 1);
      assert.ok((await ids('type=*')).length >= ORDERS + 1);
      const ofOrder = await ids(`order_id=${orderIds[1]}`);
      assert.ok(ofOrder.length >= 1, JSON.stringify(ofOrder));
      assert.ok(
        ofOrder.every((e) => e.OrderId === orderIds[1]),
        JSON.stringify(ofOrder),
      );
      assert.equal((await ids(`until=${started}`)).length, 0);
      const every = await ids(`since=${started}`);
      const middle = every[Math.floor(every.length / 2)]!.OccurredAtUtc;
      const older = await ids(`until=${middle}`);
      const newer = await ids(`since=${middle}`);
      assert.ok(older.length > 0 && newer.length > 0, `${older.length} / ${newer.length}`);
      assert.ok(
        older.every((e) => e.OccurredAtUtc < middle),
        JSON.stringify(older),
      );
      assert.ok(
        newer.every((e) => e.OccurredAtUtc >= middle),
        JSON.stringify(newer),
      );
      assert.equal(older.length + newer.length, every.length);
    });

    test('unknown events are 404; bad filters are 400 problems pointing at the parameter', async () => {
      const unknown = await call(server.url, 'GET', `/api/admin/events/evt_${'0'.repeat(32)}`, { token: admin });
      expectProblem(unknown, 404, 'not-found', 'an unknown event');
      for (const [query, pointer] of [
        ['type=order.exploded', '/type'],
        ['type=order.created,,', '/type'],
        ['order_id=abc', '/order_id'],
        ['since=last-week', '/since'],
        ['until=0000-01-01T00:00:00Z', '/until'],
        ['since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', '/since'],
        ['cursor=%%%', '/cursor'],
        [`cursor=${Buffer.from('{"t":1,"k":"seven"}').toString('base64url')}`, '/cursor'],
        ['limit=1e2', '/limit'],
      ] as const) {
        const refused = await call(server.url, 'GET', `/api/admin/events?${query}`, { token: admin });
        const problem = expectProblem(refused, 400, 'invalid-parameter', query);
        const pointers = (problem.errors as { pointer: string }[]).map((e) => e.pointer);
        assert.ok(pointers.includes(pointer), `${query}: ${refused.text}`);
      }
    });
  });
}
