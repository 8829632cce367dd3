// Customer-scoped portals through the console over real HTTP (docs/guides/portal.md, "Customer portals", "Ending
// portals"): two customers' links of one client open portals that never see each other (404, so ids do not leak),
// whose endpoints receive only their own orders' events; a link without a customer is the client's staff, as
// before; the audit trail names link and session; an admin lists and ends links and sessions at once; the client's
// secret rotation or deletion ends them; and a portal reaches exactly the API calls its pages make.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call, fetchWithin } from '../helpers/http.ts';
import { clientToken, createPortalClient, issueLink, openPortalOverHttp, type HttpPortal } from '../helpers/portal.ts';
import { LOCAL_WEBHOOKS_ENV, startReceiver, type TestReceiver } from '../helpers/webhook-receiver.ts';

for (const dialect of testDialects()) {
  describe(`customer-scoped portals through the console [${dialect}]`, () => {
    let server: AuthTestServer;
    let receivers: TestReceiver[];
    let admin: string;
    let orders: string;
    let shopToken: string;
    let shopId: string;
    const one = randomUUID();
    const two = randomUUID();

    const open = async (customerId?: string, token = shopToken) =>
      openPortalOverHttp(server, (await issueLink(server, token, customerId)).Url);
    const register = async (portal: HttpPortal, url: string) => {
      const created = await portal.call('POST', '/console/api/webhooks', { Url: url, Events: ['order.created'] });
      expectStatus(created, 201);
      return created.json as { Id: string; CustomerId: string | null };
    };
    const audit = (action: string, targetId: string) =>
      server.app.database.db
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', action)
        .where('target_id', '=', targetId)
        .execute();

    before(async () => {
      server = await startAuthServer(dialect, LOCAL_WEBHOOKS_ENV);
      receivers = [await startReceiver(), await startReceiver()];
      admin = (await clientToken(server, 'admin:read admin:write')).token;
      orders = (await clientToken(server, 'orders:read orders:write')).token;
      const shop = await createPortalClient(server, 'Corner shop');
      shopToken = shop.token;
      shopId = shop.clientId;
    });
    after(async () => {
      await server.close();
      for (const receiver of receivers) await receiver.close();
    });

    test('customer two’s portal cannot reach customer one’s endpoint, deliveries or events; each gets its own orders', async () => {
      const [first, second] = [await open(one), await open(two)];
      assert.equal(first.portal.customer_id, one, JSON.stringify(first.portal));
      assert.match(String(first.portal.session_id), /^ps_[0-9a-f]{32}$/);
      const mine = await register(first, `${receivers[0]!.url}/one`);
      const theirs = await register(second, `${receivers[1]!.url}/two`);
      assert.equal(mine.CustomerId, one);
      assert.equal(theirs.CustomerId, two);
      const tested = await first.call('POST', `/console/api/webhooks/${mine.Id}/test-events`, { Type: 'order.paid' });
      expectStatus(tested, 202);
      const delivery = tested.json.Id as string;

      const listed = await second.call('GET', '/console/api/webhooks');
      expectStatus(listed, 200);
      assert.deepEqual(
        listed.json.Items.map((e: { Id: string }) => e.Id),
        [theirs.Id],
        listed.text,
      );
      const since = new Date(Date.now() - 60_000).toISOString();
      for (const [method, path, body] of [
        ['PATCH', `/console/api/webhooks/${mine.Id}`, { Enabled: false }],
        ['POST', `/console/api/webhooks/${mine.Id}/rotate-secret`, {}],
        ['POST', `/console/api/webhooks/${mine.Id}/test-events`, { Type: 'order.created' }],
        ['GET', `/console/api/webhooks/${mine.Id}/deliveries`],
        ['POST', `/console/api/webhooks/${mine.Id}/recover`, { Since: since }],
        ['GET', `/console/api/webhooks/deliveries/${delivery}`],
        ['POST', `/console/api/webhooks/deliveries/${delivery}/redeliver`],
        ['DELETE', `/console/api/webhooks/${mine.Id}`],
      ] as Array<[string, string, unknown?]>)
        expectProblem(await second.call(method, path, body), 404, 'not-found', `${method} ${path}`);
      for (const path of ['/console/api/events', `/console/api/webhooks/${mine.Id}`])
        expectProblem(await second.call('GET', path), 403, 'forbidden', path);
      const still = await first.call('GET', `/console/api/webhooks/${mine.Id}/deliveries`);
      assert.equal(still.json.Items.length, 1, still.text);

      // A link without a customer is the client's own staff: every endpoint, its customers' included.
      const staff = await open();
      assert.equal(staff.portal.customer_id, null);
      const all = await staff.call('GET', '/console/api/webhooks');
      assert.deepEqual(all.json.Items.map((e: { Id: string }) => e.Id).sort(), [mine.Id, theirs.Id].sort(), all.text);
      expectProblem(await staff.call('GET', '/console/api/events'), 403, 'forbidden');

      // Orders of both customers: each endpoint receives only its own customer's.
      for (const customer of [one, two, one]) {
        const created = await call(server.url, 'POST', '/api/orders', {
          token: orders,
          body: { CustomerId: customer, Total: 5, Currency: 'EUR' },
        });
        expectStatus(created, 201);
      }
      const ordersTo = async (receiver: TestReceiver, count: number) =>
        (await receiver.waitFor(count))
          .map((d) => JSON.parse(d.body) as { Type: string; Data: { CustomerId: string } })
          .filter((e) => e.Type === 'order.created');
      const firstGot = await ordersTo(receivers[0]!, 3); // the test event, then two orders
      const secondGot = await ordersTo(receivers[1]!, 1);
      assert.deepEqual(
        firstGot.map((e) => e.Data.CustomerId),
        [one, one],
        JSON.stringify(firstGot),
      );
      assert.deepEqual(
        secondGot.map((e) => e.Data.CustomerId),
        [two],
        JSON.stringify(secondGot),
      );
      const logs = await second.call('GET', `/console/api/webhooks/${theirs.Id}/deliveries`);
      assert.equal(logs.json.Items.length, 1, logs.text);
    });

    test('the audit trail names the link and the portal session of each change', async () => {
      const link = await issueLink(server, shopToken, one);
      const portal = await openPortalOverHttp(server, link.Url);
      const sessionId = String(portal.portal.session_id);
      const [used] = await audit('portal_link.used', link.Id);
      assert.ok(used, 'portal_link.used names the link');
      assert.equal(JSON.parse(String(used.details)).portal_session_id, sessionId, JSON.stringify(used));
      const endpoint = await register(portal, `${receivers[0]!.url}/audited`);
      const [created] = await audit('webhook_endpoint.created', endpoint.Id);
      const details = JSON.parse(String(created?.details));
      assert.deepEqual(
        [created?.actor_id, details.portal_session_id, details.portal_link_id, details.customer_id],
        [shopId, sessionId, link.Id, one],
        JSON.stringify(created),
      );
    });

    test('an admin lists and ends portal sessions and links; the next request is refused at once', async () => {
      const portal = await open(two);
      const sessionId = String(portal.portal.session_id);
      const sessions = await call(server.url, 'GET', `/api/admin/portal-sessions?client_id=${shopId}&limit=100`, {
        token: admin,
      });
      expectStatus(sessions, 200);
      const listed = sessions.json.Items.find((s: { Id: string }) => s.Id === sessionId);
      assert.equal(listed?.CustomerId, two, sessions.text);
      assert.equal(listed?.Via, 'link', sessions.text);
      expectStatus(await portal.call('GET', '/console/api/webhooks'), 200);
      const ended = await call(server.url, 'DELETE', `/api/admin/portal-sessions/${sessionId}`, { token: admin });
      expectStatus(ended, 204);
      expectProblem(await portal.call('GET', '/console/api/webhooks'), 401, 'unauthorized');
      expectProblem(
        await call(server.url, 'DELETE', `/api/admin/portal-sessions/${sessionId}`, { token: admin }),
        404,
        'not-found',
      );
      assert.equal((await audit('portal_session.ended', sessionId)).length, 1);

      // Revoking a link: unused, it opens nothing (410); used, the session it opened ends.
      const unused = await issueLink(server, shopToken, one);
      const usedLink = await issueLink(server, shopToken, one);
      const opened = await openPortalOverHttp(server, usedLink.Url);
      const links = await call(server.url, 'GET', `/api/admin/portal-links?client_id=${shopId}&limit=100`, {
        token: admin,
      });
      const stateOf = (id: string) => links.json.Items.find((l: { Id: string }) => l.Id === id)?.State;
      assert.deepEqual([stateOf(unused.Id), stateOf(usedLink.Id)], ['usable', 'used'], links.text);
      assert.ok(!links.text.includes(unused.Url.split('/').at(-1)!), 'never the token');
      for (const link of [unused, usedLink])
        expectStatus(await call(server.url, 'DELETE', `/api/admin/portal-links/${link.Id}`, { token: admin }), 204);
      expectProblem(await opened.call('GET', '/console/api/webhooks'), 401, 'unauthorized');
      const refused = await fetchWithin(unused.Url, { method: 'POST', headers: { origin: server.url } });
      assert.equal(refused.status, 410, await refused.text());
      assert.equal((await audit('portal_link.revoked', unused.Id)).length, 1);
      // Reading needs admin:read: the shop's own token is refused.
      expectProblem(
        await call(server.url, 'GET', '/api/admin/portal-links', { token: shopToken }),
        403,
        'insufficient-scope',
      );
    });

    test('rotating the client’s secret or deleting the client ends its portal sessions and links', async () => {
      for (const change of ['rotate', 'delete'] as const) {
        const client = await createPortalClient(server, `Shop to ${change}`);
        const portal = await open(one, client.token);
        const staff = await open(undefined, client.token);
        const unused = await issueLink(server, client.token, two);
        expectStatus(await portal.call('GET', '/console/api/webhooks'), 200);
        const answer =
          change === 'rotate'
            ? await call(server.url, 'POST', `/api/admin/clients/${client.clientId}/rotate-secret`, { token: admin })
            : await call(server.url, 'DELETE', `/api/admin/clients/${client.clientId}`, { token: admin });
        assert.ok(answer.status < 300, answer.text);
        for (const ended of [portal, staff])
          expectProblem(await ended.call('GET', '/console/api/webhooks'), 401, 'unauthorized', change);
        const refused = await fetchWithin(unused.Url, { method: 'POST', headers: { origin: server.url } });
        assert.equal(refused.status, 410, `${change}: ${await refused.text()}`);
      }
    });

    test('a portal reaches exactly the API calls its pages make, and nothing else (403)', async () => {
      const portal = await open(one);
      const endpoint = await register(portal, `${receivers[0]!.url}/table`);
      const tested = await portal.call('POST', `/console/api/webhooks/${endpoint.Id}/test-events`, {
        Type: 'order.paid',
      });
      const delivery = tested.json.Id as string;
      const e = `/console/api/webhooks/${endpoint.Id}`;
      const d = `/console/api/webhooks/deliveries/${delivery}`;
      const allowed: Array<[string, string, unknown?]> = [
        ['GET', '/console/api/webhooks'],
        ['POST', '/console/api/webhooks', { Url: `${receivers[0]!.url}/table-2`, Events: ['order.paid'] }],
        ['PATCH', e, { Description: 'table' }],
        ['POST', `${e}/rotate-secret`, {}],
        ['POST', `${e}/test-events`, { Type: 'order.paid' }],
        ['POST', `${e}/recover`, { Since: new Date(Date.now() - 60_000).toISOString() }],
        ['GET', `${e}/deliveries?limit=20`],
        ['GET', d],
        ['POST', `${d}/redeliver`],
        ['DELETE', e],
      ];
      const refused: Array<[string, string, unknown?]> = [
        ['GET', '/console/api/events'],
        ['GET', '/console/api/events/evt_00000000000000000000000000000000'],
        ['GET', e],
        ['PUT', e, {}],
        ['POST', `${e}/ping`],
        ['POST', '/console/api/webhooks/portal-links', {}],
        ['POST', '/console/api/webhooks/%70ortal-links', {}],
        ['GET', '/console/api/webhooks/portal-links'],
        ['GET', '/console/api/orders'],
        ['GET', '/console/api/me/clients'],
        ['GET', '/console/api/admin/portal-sessions'],
        ['DELETE', '/console/api/admin/portal-links/pl_00000000000000000000000000000000'],
        ['GET', '/console/api/admin/users'],
        ['GET', `${d}/attempts`],
      ];
      for (const [method, path, body] of allowed) {
        const answer = await portal.call(method, path, body);
        assert.ok(answer.status < 400 || answer.status === 409, `${method} ${path}: ${answer.status} ${answer.text}`);
      }
      for (const [method, path, body] of refused)
        expectProblem(await portal.call(method, path, body), 403, 'forbidden', `${method} ${path}`);
    });
  });
}
