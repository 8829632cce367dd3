// The operators' delivery log across all clients (docs/guides/admin-api.md, Delivery log): an admin pages
// through every client's deliveries newest first without duplicates or gaps, narrows them by endpoint,
// client, event, state, event type and time, reads one with its attempts, and redelivers or recovers any
// client's deliveries with the owner's semantics, each recorded in the audit trail with the admin as actor.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem } from '../helpers/expect.ts';
import { allPages, call, callExpecting } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const ENV = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s,50ms' };
const PINGS = 4;

interface Item {
  Id: string;
  ClientId: string;
  EndpointId: string;
  EventId: string;
  EventType: string;
  State: string;
  CreatedAtUtc: string;
  _links: Record<string, { href: string; method: string }>;
}

for (const dialect of testDialects()) {
  describe(`admin API: delivery log [${dialect}]`, () => {
    let server: TestServer;
    let receiver: TestReceiver;
    let admin: string;
    const ids = { alphaOk: '', alphaDown: '', betaOk: '' };
    const tokens = { alpha: '', beta: '' };
    let started: string;

    const get = async (path: string, what = path) =>
      (await callExpecting(server.url, 'GET', path, 200, { token: admin }, what)).json;
    /** Every page of a list, following `_links.next`. */
    const all = (path: string) => allPages<Item>(server.url, path, admin);

    before(async () => {
      server = await startServer(dialect, ENV);
      receiver = await startReceiver();
      receiver.answer = (request) =>
        request.url?.endsWith('/hang')
          ? 'hang'
          : request.url?.endsWith('/down')
            ? { status: 503, body: 'try later' }
            : { status: 200 };
      tokens.alpha = await server.issuer.clientToken('webhooks:manage', 'client-alpha');
      tokens.beta = await server.issuer.clientToken('webhooks:manage', 'client-beta');
      admin = await server.issuer.clientToken('admin:read admin:write', 'ops-bot');
      started = new Date(Date.now() - 1000).toISOString();
      ids.alphaOk = (await registerEndpoint(server, tokens.alpha, `${receiver.url}/ok`, ['webhook.ping'])).json.Id;
      ids.alphaDown = (await registerEndpoint(server, tokens.alpha, `${receiver.url}/down`, ['webhook.ping'])).json.Id;
      ids.betaOk = (await registerEndpoint(server, tokens.beta, `${receiver.url}/ok`, ['webhook.ping'])).json.Id;
      for (let i = 0; i < PINGS; i++)
        for (const [token, id] of [
          [tokens.alpha, ids.alphaOk],
          [tokens.alpha, ids.alphaDown],
          [tokens.beta, ids.betaOk],
        ] as const)
          await callExpecting(server.url, 'POST', `/api/webhooks/${id}/ping`, 202, { token }, 'ping');
      let states = '';
      await waitUntil(
        async () => {
          const log = await get('/api/admin/webhook-deliveries?limit=100');
          states = log.Items.map((d: Item) => d.State).join();
          return log.Items.length === 3 * PINGS && !states.includes('pending');
        },
        20_000,
        () => `every delivery settled: ${states}`,
      );
    });
    after(async () => {
      await receiver.close();
      await server.close();
    });

    test('an admin pages through every client’s deliveries newest first, without duplicates or gaps', async () => {
      const { items, pages } = await all('/api/admin/webhook-deliveries?limit=5');
      assert.equal(pages, Math.ceil((3 * PINGS) / 5));
      assert.equal(new Set(items.map((d) => d.Id)).size, 3 * PINGS, 'no duplicates, none missing');
      const order = items.map((d) => `${d.CreatedAtUtc} ${d.Id}`);
      assert.deepEqual(order, [...order].sort().reverse(), 'newest first, ties by id');
      const owners = new Map(items.map((d) => [d.EndpointId, d.ClientId]));
      assert.deepEqual(Object.fromEntries(owners), {
        [ids.alphaOk]: 'client-alpha',
        [ids.alphaDown]: 'client-alpha',
        [ids.betaOk]: 'client-beta',
      });
      const one = items[0]!;
      assert.equal(one._links.self!.href, `${server.url}/api/admin/webhook-deliveries/${one.Id}`);
      assert.equal(one._links.endpoint!.href, `${server.url}/api/admin/webhook-endpoints/${one.EndpointId}`);
      assert.equal(one._links.redeliver!.href, `${server.url}/api/admin/webhook-deliveries/${one.Id}/redeliver`);
    });

    test('filters by client, endpoint, event, state, event type and time', async () => {
      const count = async (query: string) => (await all(`/api/admin/webhook-deliveries?limit=3&${query}`)).items;
      const beta = await count('client_id=client-beta');
      assert.deepEqual([...new Set(beta.map((d) => d.EndpointId))], [ids.betaOk]);
      assert.equal(beta.length, PINGS);
      const alpha = await count('client_id=client-alpha');
      assert.equal(alpha.length, 2 * PINGS);
      const order = alpha.map((d) => `${d.CreatedAtUtc} ${d.Id}`);
      assert.deepEqual(order, [...order].sort().reverse(), 'one client’s endpoints merged newest first');
      assert.equal((await count(`endpoint_id=${ids.alphaDown}`)).length, PINGS);
      assert.equal((await count(`endpoint_id=${ids.alphaDown}&client_id=client-beta`)).length, 0);
      assert.equal((await count('client_id=nobody')).length, 0);
      const failed = await count('state=failed');
      assert.deepEqual([...new Set(failed.map((d) => d.EndpointId))], [ids.alphaDown]);
      assert.equal(failed.length, PINGS);
      assert.equal((await count('state=succeeded&client_id=client-alpha')).length, PINGS);
      assert.equal((await count('event_type=webhook.ping')).length, 3 * PINGS);
      assert.equal((await count('event_type=order.created')).length, 0);
      const event = beta[0]!.EventId;
      assert.deepEqual(
        (await count(`event_id=${event}`)).map((d) => d.Id),
        [beta[0]!.Id],
      );
      assert.equal((await count(`until=${started}`)).length, 0);
      assert.equal((await count(`since=${started}`)).length, 3 * PINGS);
      const middle = beta[1]!.CreatedAtUtc;
      const older = await count(`client_id=client-beta&until=${middle}`);
      assert.ok(
        older.every((d) => d.CreatedAtUtc < middle),
        `until excludes later ones: ${JSON.stringify(older)}`,
      );
    });

    test('one delivery shows every attempt: status, duration, error kind, detail and response excerpt', async () => {
      const [failed] = (await all(`/api/admin/webhook-deliveries?limit=1&endpoint_id=${ids.alphaDown}`)).items;
      const one = await get(`/api/admin/webhook-deliveries/${failed!.Id}`);
      assert.equal(one.ClientId, 'client-alpha');
      assert.equal(one.Attempts.length, 2, JSON.stringify(one));
      for (const attempt of one.Attempts) {
        assert.equal(attempt.StatusCode, 503, JSON.stringify(attempt));
        assert.equal(attempt.ErrorKind, 'status', JSON.stringify(attempt));
        assert.equal(attempt.ResponseExcerpt, 'try later', JSON.stringify(attempt));
        assert.ok(Number.isInteger(attempt.DurationMs) && attempt.DurationMs >= 0, JSON.stringify(attempt));
        assert.ok(attempt.StartedAtUtc >= started, JSON.stringify(attempt));
      }
      const unknown = await call(server.url, 'GET', `/api/admin/webhook-deliveries/dlv_${'0'.repeat(32)}`, {
        token: admin,
      });
      expectProblem(unknown, 404, 'not-found', 'an unknown delivery');
    });

    test('bad filters are 400 problems pointing at the parameter', async () => {
      for (const [query, pointer] of [
        ['since=yesterday', '/since'],
        ['until=2026-13-01T00:00:00Z', '/until'],
        ['state=lost', '/state'],
        ['event_type=order.exploded', '/event_type'],
        ['endpoint_id=whep_nope', '/endpoint_id'],
        ['cursor=not-a-cursor', '/cursor'],
        [`cursor=${Buffer.from('{"t":1,"k":"dlv_x"}').toString('base64url')}`, '/cursor'],
        ['since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', '/since'],
        ['limit=0x10', '/limit'],
      ] as const) {
        const refused = await call(server.url, 'GET', `/api/admin/webhook-deliveries?${query}`, { token: admin });
        const problem = expectProblem(refused, 400, 'invalid-parameter', query);
        const pointers = (problem.errors as { pointer: string }[]).map((e) => e.pointer);
        assert.ok(pointers.includes(pointer), `${query}: ${refused.text}`);
      }
    });

    test('redeliver sends any client’s delivery again and is audited with the admin as actor', async () => {
      const [failed] = (await all(`/api/admin/webhook-deliveries?limit=1&endpoint_id=${ids.alphaDown}`)).items;
      const path = `/api/admin/webhook-deliveries/${failed!.Id}/redeliver`;
      const received = receiver.received.length;
      const queued = await callExpecting(server.url, 'POST', path, 202, { token: admin }, 'redeliver');
      assert.equal(queued.json.Id, failed!.Id, queued.text);
      assert.equal(queued.json.ClientId, 'client-alpha', queued.text);
      await receiver.waitFor(received + 1);
      const again = receiver.received.slice(received).map((r) => r.headers['x-service-delivery']);
      assert.ok(again.includes(failed!.Id), `the same delivery id went out again: ${again.join()}`);
      const audit = await get(`/api/admin/audit?action=webhook_delivery.redelivered&target=${failed!.Id}`);
      assert.equal(audit.Items.length, 1, JSON.stringify(audit));
      assert.deepEqual(audit.Items[0].Actor, { Type: 'client', Id: 'ops-bot' });
      assert.equal(audit.Items[0].Details.client_id, 'client-alpha');

      // A delivery still in flight (its receiver never answers) is pending: redeliver is a conflict, as for the owner.
      const hanging = (await registerEndpoint(server, tokens.beta, `${receiver.url}/hang`, ['webhook.ping'])).json.Id;
      const inFlight = receiver.received.length;
      const ping = await callExpecting(
        server.url,
        'POST',
        `/api/webhooks/${hanging}/ping`,
        202,
        { token: tokens.beta },
        'ping',
      );
      await receiver.waitFor(inFlight + 1);
      const conflict = await call(server.url, 'POST', `/api/admin/webhook-deliveries/${ping.json.Id}/redeliver`, {
        token: admin,
      });
      expectProblem(conflict, 409, 'webhook-state', 'a pending delivery');
      const unknown = await call(server.url, 'POST', `/api/admin/webhook-deliveries/dlv_${'0'.repeat(32)}/redeliver`, {
        token: admin,
      });
      expectProblem(unknown, 404, 'not-found', 'an unknown delivery');
    });

    test('recover queues again every failed delivery of any client’s endpoint since a time, audited', async () => {
      await waitUntil(
        async () =>
          (await get(`/api/admin/webhook-deliveries?state=pending&endpoint_id=${ids.alphaDown}`)).Items.length === 0,
        20_000,
        () => 'the redelivered delivery settled',
      );
      const path = `/api/admin/webhook-endpoints/${ids.alphaDown}/recover`;
      const recovered = await callExpecting(
        server.url,
        'POST',
        path,
        202,
        { token: admin, body: { Since: started } },
        'recover',
      );
      assert.deepEqual(recovered.json, { Requeued: PINGS }, recovered.text);
      const audit = await get(`/api/admin/audit?action=webhook_endpoint.recovered&target=${ids.alphaDown}`);
      assert.equal(audit.Items.length, 1, JSON.stringify(audit));
      assert.deepEqual(audit.Items[0].Actor, { Type: 'client', Id: 'ops-bot' });
      assert.deepEqual(audit.Items[0].Details, { client_id: 'client-alpha', since: started, requeued: PINGS });

      const future = new Date(Date.now() + 3_600_000).toISOString();
      const refused = await call(server.url, 'POST', path, { token: admin, body: { Since: future } });
      const problem = expectProblem(refused, 422, 'validation-error', 'Since in the future');
      assert.equal((problem.errors as { pointer: string }[])[0]!.pointer, '/Since', refused.text);
      const yearZero = await call(server.url, 'POST', path, { token: admin, body: { Since: '0000-01-01T00:00:00Z' } });
      expectProblem(yearZero, 422, 'validation-error', 'Since before year 1');
      const unknown = await call(server.url, 'POST', `/api/admin/webhook-endpoints/whep_${'0'.repeat(32)}/recover`, {
        token: admin,
        body: { Since: started },
      });
      expectProblem(unknown, 404, 'not-found', 'an unknown endpoint');
      await callExpecting(
        server.url,
        'POST',
        `/api/admin/webhook-endpoints/${ids.betaOk}/disable`,
        200,
        { token: admin },
        'disable',
      );
      const disabled = await call(server.url, 'POST', `/api/admin/webhook-endpoints/${ids.betaOk}/recover`, {
        token: admin,
        body: { Since: started },
      });
      expectProblem(disabled, 409, 'webhook-state', 'a disabled endpoint');
    });
  });
}
