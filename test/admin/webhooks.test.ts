// Webhook endpoints across all clients through the admin API (docs/guides/admin-api.md, Webhook
// endpoints): two clients' endpoints listed in cursor pages and filtered by client, an admin's disable
// (DisabledReason `admin`) stops deliveries, the stats count what happened, and every change is audited:
// the owner's create, update, rotation and delete, the admin's disable and enable, the automatic disable.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const ENV = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s,100ms,100ms' };

function expect(result: CallResult, status: number, what: string): CallResult {
  assert.equal(result.status, status, `${what}: ${result.status} ${result.text}`);
  return result;
}

for (const dialect of testDialects()) {
  describe(`admin API: webhook endpoints [${dialect}]`, () => {
    let server: TestServer;
    let receiver: TestReceiver;
    let alpha: string;
    let beta: string;
    let admin: string;
    const since = new Date(Date.now() - 60_000).toISOString();

    before(async () => {
      server = await startServer(dialect, ENV);
      receiver = await startReceiver();
      // /ok answers 200, /down 503, /gone 410.
      receiver.answer = (request) => ({
        status: request.url?.endsWith('/gone') ? 410 : request.url?.endsWith('/down') ? 503 : 200,
      });
      alpha = await server.issuer.clientToken('webhooks:manage', 'client-alpha');
      beta = await server.issuer.clientToken('webhooks:manage', 'client-beta');
      admin = await server.issuer.clientToken('admin:read admin:write', 'ops-bot');
    });
    after(async () => {
      await receiver.close();
      await server.close();
    });

    async function deliveryState(owner: string, endpointId: string): Promise<string[]> {
      const listed = await call(server.url, 'GET', `/api/webhooks/${endpointId}/deliveries`, { token: owner });
      return (listed.json?.Items ?? []).map((d: { State: string }) => d.State);
    }

    async function ping(owner: string, endpointId: string): Promise<CallResult> {
      return call(server.url, 'POST', `/api/webhooks/${endpointId}/ping`, { token: owner });
    }

    async function audit(action: string, target: string) {
      const query = new URLSearchParams({ action, target });
      return expect(await call(server.url, 'GET', `/api/admin/audit?${query}`, { token: admin }), 200, 'audit').json
        .Items as { Actor: { Type: string; Id: string } }[];
    }

    test('lists both clients’ endpoints in pages, filters by client, disables, enables and counts', async () => {
      const ok = (await registerEndpoint(server, alpha, `${receiver.url}/ok`, ['webhook.ping'])).json.Id as string;
      const down = (await registerEndpoint(server, alpha, `${receiver.url}/down`, ['webhook.ping'])).json.Id as string;
      const gone = (await registerEndpoint(server, beta, `${receiver.url}/gone`, ['webhook.ping'])).json.Id as string;

      const seen: { Id: string; ClientId: string }[] = [];
      let next: string | undefined = '/api/admin/webhook-endpoints?limit=2';
      while (next) {
        const page = expect(await call(server.url, 'GET', next, { token: admin }), 200, 'a page');
        seen.push(...page.json.Items);
        next =
          page.json._links.next &&
          new URL(page.json._links.next.href).pathname + new URL(page.json._links.next.href).search;
      }
      assert.deepEqual(
        seen.map((e) => [e.Id, e.ClientId]),
        [
          [ok, 'client-alpha'],
          [down, 'client-alpha'],
          [gone, 'client-beta'],
        ],
      );
      const betaOnly = await call(server.url, 'GET', '/api/admin/webhook-endpoints?client_id=client-beta', {
        token: admin,
      });
      assert.deepEqual(
        betaOnly.json.Items.map((e: { Id: string }) => e.Id),
        [gone],
        betaOnly.text,
      );

      // What happens: one success at /ok, three failed attempts at /down (dead), one 410 at /gone (disabled).
      for (const [owner, id] of [
        [alpha, ok],
        [alpha, down],
        [beta, gone],
      ] as const)
        expect(await ping(owner, id), 202, `ping ${id}`);
      let states = '';
      await waitUntil(
        async () => {
          const all = await Promise.all([
            deliveryState(alpha, ok),
            deliveryState(alpha, down),
            deliveryState(beta, gone),
          ]);
          states = all.map((each) => each.join()).join(' / ');
          return states === 'succeeded / failed / failed';
        },
        20_000,
        () => `deliveries at /ok, /down, /gone: ${states}`,
      );
      const stats = expect(
        await call(server.url, 'GET', `/api/admin/webhook-stats?client_id=client-alpha&since=${since}`, {
          token: admin,
        }),
        200,
        'stats',
      );
      assert.deepEqual(stats.json.Attempts, { Succeeded: 1, Failed: { status: 3 } }, stats.text);
      assert.deepEqual(stats.json.Deliveries, { Pending: 0, Succeeded: 1, Dead: 1 }, stats.text);
      const betaStats = await call(server.url, 'GET', `/api/admin/webhook-stats?client_id=client-beta&since=${since}`, {
        token: admin,
      });
      assert.deepEqual(betaStats.json.Attempts, { Succeeded: 0, Failed: { status: 1 } }, betaStats.text);

      // The automatic disable after 410 Gone is audited with Signet as actor.
      const automatic = await audit('webhook_endpoint.disabled', gone);
      assert.deepEqual(
        automatic.map((e) => e.Actor),
        [{ Type: 'system', Id: 'signet' }],
      );

      // The admin's disable stops deliveries and is told apart from the owner's and the dispatcher's.
      const disabled = expect(
        await call(server.url, 'POST', `/api/admin/webhook-endpoints/${ok}/disable`, { token: admin }),
        200,
        'disable',
      );
      assert.equal(disabled.json.Enabled, false, disabled.text);
      assert.equal(disabled.json.DisabledReason, 'admin', disabled.text);
      const owner = await call(server.url, 'GET', `/api/webhooks/${ok}`, { token: alpha });
      assert.equal(owner.json.DisabledReason, 'admin', owner.text);
      expect(await ping(alpha, ok), 409, 'a ping to the disabled endpoint');
      const received = receiver.received.length;
      const enabled = expect(
        await call(server.url, 'POST', `/api/admin/webhook-endpoints/${ok}/enable`, { token: admin }),
        200,
        'enable',
      );
      assert.equal(enabled.json.Enabled, true, enabled.text);
      expect(await ping(alpha, ok), 202, 'a ping once enabled again');
      await receiver.waitFor(received + 1);
      for (const action of ['webhook_endpoint.disabled', 'webhook_endpoint.enabled'])
        assert.deepEqual(
          (await audit(action, ok)).map((e) => e.Actor),
          [{ Type: 'client', Id: 'ops-bot' }],
          action,
        );
      const read = expect(
        await call(server.url, 'GET', `/api/admin/webhook-endpoints/${gone}`, { token: admin }),
        200,
        'read',
      );
      assert.equal(read.json.DisabledReason, 'gone', read.text);
      expect(await call(server.url, 'GET', '/api/admin/webhook-endpoints/whep_nope', { token: admin }), 404, 'unknown');
    });

    test('the owner’s create, update, secret rotation and delete are audited with the client as actor', async () => {
      const id = (await registerEndpoint(server, beta, `${receiver.url}/ok`, ['webhook.ping'])).json.Id as string;
      expect(
        await call(server.url, 'PATCH', `/api/webhooks/${id}`, { token: beta, body: { Description: 'renamed' } }),
        200,
        'update',
      );
      expect(await call(server.url, 'POST', `/api/webhooks/${id}/rotate-secret`, { token: beta }), 200, 'rotate');
      expect(await call(server.url, 'DELETE', `/api/webhooks/${id}`, { token: beta }), 204, 'delete');
      for (const action of [
        'webhook_endpoint.created',
        'webhook_endpoint.updated',
        'webhook_endpoint.secret_rotated',
        'webhook_endpoint.deleted',
      ]) {
        const entries = await audit(action, id);
        assert.deepEqual(
          entries.map((e) => e.Actor),
          [{ Type: 'client', Id: 'client-beta' }],
          action,
        );
      }
      const trail = await call(server.url, 'GET', `/api/admin/audit?target=${id}`, { token: admin });
      assert.ok(!/whsec_|"Secret"/.test(trail.text), `no secret in the trail: ${trail.text}`);
    });

    test('a token without the admin scopes is refused (403)', async () => {
      for (const [method, path] of [
        ['GET', '/api/admin/webhook-endpoints'],
        ['GET', '/api/admin/webhook-endpoints/whep_x'],
        ['POST', '/api/admin/webhook-endpoints/whep_x/disable'],
        ['POST', '/api/admin/webhook-endpoints/whep_x/enable'],
        ['GET', '/api/admin/webhook-stats?client_id=client-alpha'],
      ] as const)
        expect(await call(server.url, method, path, { token: alpha }), 403, `${method} ${path}`);
    });
  });
}
