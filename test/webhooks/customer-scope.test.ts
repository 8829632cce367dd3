// Customer-scoped portal tokens on the webhook API (docs/guides/portal.md, "Customer portals"): a token carrying
// the portal claim of one of a client's customers sees, changes, tests and rotates only that customer's endpoints
// and deliveries (another customer's answer 404, as if absent), reads only that customer's events, and that
// customer's endpoints receive only events about its orders, through every path that writes an event (SQLite;
// PostgreSQL with and without its one-statement create). The client's own token keeps seeing everything.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MAX_ENDPOINTS_PER_CUSTOMER } from '../../src/webhooks/api/endpoints.service.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const CLIENT = 'shop-client';
const SCOPES = 'webhooks:manage events:read';

for (const dialect of testDialects()) {
  describe(`customer-scoped portal tokens [${dialect}]`, () => {
    let server: TestServer;
    let receivers: Record<'one' | 'two' | 'staff', TestReceiver>;
    // Customer one is named in upper case: ids are kept, compared and returned in lower case.
    const customerOne = randomUUID().toUpperCase();
    const customerTwo = randomUUID();
    let staff: string;
    let one: string;
    let two: string;
    let orders: string;
    const endpoints: Record<'one' | 'two' | 'staff', string> = { one: '', two: '', staff: '' };

    const portalToken = (customerId: string | undefined, session: string, link?: string) =>
      server.issuer.token({
        sub: CLIENT,
        client_id: CLIENT,
        scope: SCOPES,
        signet_portal: {
          session_id: session,
          ...(link && { link_id: link }),
          ...(customerId && { customer_id: customerId.toLowerCase() }),
        },
      });

    before(async () => {
      server = await startServer(dialect, LOCAL_WEBHOOKS_ENV);
      receivers = { one: await startReceiver(), two: await startReceiver(), staff: await startReceiver() };
      staff = await server.issuer.clientToken(SCOPES, CLIENT);
      one = await portalToken(
        customerOne,
        'ps_11111111111111111111111111111111',
        'pl_11111111111111111111111111111111',
      );
      two = await portalToken(
        customerTwo,
        'ps_22222222222222222222222222222222',
        'pl_22222222222222222222222222222222',
      );
      orders = await server.issuer.clientToken('orders:read orders:write', 'order-taker');
      for (const who of ['one', 'two', 'staff'] as const) {
        const token = { one, two, staff }[who];
        const created = await registerEndpoint(server, token, `${receivers[who].url}/${who}`, ['order.created']);
        endpoints[who] = created.json.Id;
        const expected = who === 'one' ? customerOne.toLowerCase() : who === 'two' ? customerTwo : null;
        assert.equal(created.json.CustomerId, expected, created.text);
      }
    });
    after(async () => {
      await server.close();
      for (const receiver of Object.values(receivers)) await receiver.close();
    });

    test("customer two cannot list, read, change, test, rotate or delete customer one's endpoint: 404", async () => {
      const listed = await call(server.url, 'GET', '/api/webhooks', { token: two });
      expectStatus(listed, 200);
      assert.deepEqual(
        listed.json.Items.map((e: { Id: string }) => e.Id),
        [endpoints.two],
        listed.text,
      );
      const id = endpoints.one;
      const attempts: Array<[string, string, unknown?]> = [
        ['GET', `/api/webhooks/${id}`],
        ['PATCH', `/api/webhooks/${id}`, { Description: 'taken over' }],
        ['POST', `/api/webhooks/${id}/rotate-secret`, {}],
        ['POST', `/api/webhooks/${id}/ping`],
        ['POST', `/api/webhooks/${id}/test-events`, { Type: 'order.created' }],
        ['GET', `/api/webhooks/${id}/deliveries`],
        ['POST', `/api/webhooks/${id}/recover`, { Since: new Date(Date.now() - 60_000).toISOString() }],
        ['DELETE', `/api/webhooks/${id}`],
      ];
      for (const [method, path, body] of attempts) {
        const answer = await call(server.url, method, path, { token: two, body });
        expectProblem(answer, 404, 'not-found', `${method} ${path}`);
      }
      // Still there, unchanged, for its own customer and for the client's staff.
      const mine = await call(server.url, 'GET', `/api/webhooks/${id}`, { token: one });
      expectStatus(mine, 200);
      assert.equal(mine.json.Description, '', mine.text);
      const all = await call(server.url, 'GET', '/api/webhooks', { token: staff });
      assert.equal(all.json.Items.length, 3, all.text);
    });

    test("each customer's endpoint receives only events of that customer's orders; the client's own gets all", async () => {
      const create = async (customerId: string, key?: string) => {
        const created = await call(server.url, 'POST', '/api/orders', {
          token: orders,
          body: { CustomerId: customerId, Total: 12.5, Currency: 'EUR' },
          headers: key ? { 'idempotency-key': key } : {},
        });
        expectStatus(created, 201);
        return created.json.Id as number;
      };
      // Without and with an Idempotency-Key: on PostgreSQL the latter is the one-statement create.
      const ids = [
        await create(customerOne),
        await create(customerTwo),
        await create(customerOne.toLowerCase(), randomUUID()),
        await create(customerTwo, randomUUID()),
      ];
      await receivers.staff.waitFor(4);
      const [oneGot, twoGot] = [await receivers.one.waitFor(2), await receivers.two.waitFor(2)];
      const orderOf = (body: string) => JSON.parse(body).Data as { Id: number; CustomerId: string };
      assert.deepEqual(
        oneGot.map((d) => orderOf(d.body).Id),
        [ids[0], ids[2]],
        oneGot.map((d) => d.body).join('\n'),
      );
      for (const d of oneGot) assert.equal(orderOf(d.body).CustomerId, customerOne.toLowerCase(), d.body);
      assert.deepEqual(
        twoGot.map((d) => orderOf(d.body).Id),
        [ids[1], ids[3]],
        twoGot.map((d) => d.body).join('\n'),
      );
      // The delivery rows are written with the order: none more will come.
      const logOf = async (endpoint: string, token: string) =>
        (await call(server.url, 'GET', `/api/webhooks/${endpoint}/deliveries`, { token })).json.Items as Array<{
          Id: string;
        }>;
      assert.equal((await logOf(endpoints.one, one)).length, 2);
      assert.equal((await logOf(endpoints.two, two)).length, 2);
      // Customer two reaches none of customer one's deliveries.
      for (const delivery of await logOf(endpoints.one, one)) {
        expectProblem(
          await call(server.url, 'GET', `/api/webhooks/deliveries/${delivery.Id}`, { token: two }),
          404,
          'not-found',
        );
        expectProblem(
          await call(server.url, 'POST', `/api/webhooks/deliveries/${delivery.Id}/redeliver`, { token: two }),
          404,
          'not-found',
        );
        expectStatus(await call(server.url, 'GET', `/api/webhooks/deliveries/${delivery.Id}`, { token: staff }), 200);
      }
    });

    test("a customer reads only its own orders' events and its own endpoints' test events", async () => {
      const tested = await call(server.url, 'POST', `/api/webhooks/${endpoints.one}/test-events`, {
        token: one,
        body: { Type: 'order.paid' },
      });
      expectStatus(tested, 202);
      const feed = async (token: string) => {
        const items: Array<{ Id: string; Type: string; Data: { CustomerId?: string } }> = [];
        await waitUntil(
          async () => {
            const page = await call(server.url, 'GET', '/api/events?limit=100', { token });
            items.splice(0, items.length, ...page.json.Items);
            return items.some((e) => e.Type === 'order.paid') || token !== one;
          },
          10_000,
          () => `the test event in the feed: ${JSON.stringify(items)}`,
        );
        return items;
      };
      const oneSees = await feed(one);
      const orderEvents = oneSees.filter((e) => e.Type === 'order.created');
      assert.ok(orderEvents.length >= 2, JSON.stringify(oneSees));
      for (const event of orderEvents) assert.equal(event.Data.CustomerId, customerOne.toLowerCase());
      const twoSees = await feed(two);
      assert.ok(
        twoSees.every((e) => e.Type === 'order.created' && e.Data.CustomerId === customerTwo),
        JSON.stringify(twoSees),
      );
      const testEvent = oneSees.find((e) => e.Type === 'order.paid')!;
      expectProblem(await call(server.url, 'GET', `/api/events/${testEvent.Id}`, { token: two }), 404, 'not-found');
      const staffSees = await call(server.url, 'GET', '/api/events?limit=100', { token: staff });
      assert.ok(staffSees.json.Items.length >= oneSees.length + twoSees.length, staffSees.text);
    });

    test('changes through a portal name its session, its link and its customer in the audit trail', async () => {
      const rotated = await call(server.url, 'POST', `/api/webhooks/${endpoints.one}/rotate-secret`, {
        token: one,
        body: {},
      });
      expectStatus(rotated, 200);
      const entry = await server.app.database.db
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', 'webhook_endpoint.secret_rotated')
        .where('target_id', '=', endpoints.one)
        .executeTakeFirstOrThrow();
      const details = JSON.parse(String(entry.details));
      assert.equal(entry.actor_id, CLIENT, JSON.stringify(entry));
      assert.equal(details.portal_session_id, 'ps_11111111111111111111111111111111', JSON.stringify(entry));
      assert.equal(details.portal_link_id, 'pl_11111111111111111111111111111111', JSON.stringify(entry));
      assert.equal(details.customer_id, customerOne.toLowerCase(), JSON.stringify(entry));
    });

    test('a customer has its own endpoint quota; the client’s is untouched by it', async () => {
      const customer = randomUUID();
      const token = await portalToken(customer, 'ps_33333333333333333333333333333333');
      for (let i = 1; i < MAX_ENDPOINTS_PER_CUSTOMER + 1; i++)
        await registerEndpoint(server, token, `${receivers.one.url}/quota-${i}`, ['order.paid']);
      const over = await call(server.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: `${receivers.one.url}/quota-over`, Events: ['order.paid'] },
      });
      expectProblem(over, 409, 'limit-reached');
      await registerEndpoint(server, staff, `${receivers.staff.url}/still-room`, ['order.paid']);
    });

    test('a portal token issues no portal link; a malformed portal claim is refused', async () => {
      expectProblem(await call(server.url, 'POST', '/api/webhooks/portal-links', { token: one }), 403, 'forbidden');
      const customerLink = await call(server.url, 'POST', '/api/webhooks/portal-links', {
        token: staff,
        body: { CustomerId: customerOne },
      });
      expectStatus(customerLink, 201);
      assert.equal(customerLink.json.CustomerId, customerOne.toLowerCase(), customerLink.text);
      assert.match(customerLink.json.Id, /^pl_[0-9a-f]{32}$/);
      expectProblem(
        await call(server.url, 'POST', '/api/webhooks/portal-links', { token: staff, body: { CustomerId: 'nope' } }),
        422,
        'validation-error',
      );
      for (const claim of ['ps_x', { customer_id: customerOne }, { session_id: 'ps_1', customer_id: 7 }]) {
        const bad = await server.issuer.token({ sub: CLIENT, client_id: CLIENT, scope: SCOPES, signet_portal: claim });
        expectProblem(await call(server.url, 'GET', '/api/webhooks', { token: bad }), 401, 'invalid-token');
      }
    });
  });
}
