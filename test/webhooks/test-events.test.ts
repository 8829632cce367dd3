// POST /api/webhooks/{id}/test-events: one delivery of any catalogue type to one endpoint, whose Data is the
// example the OpenAPI document's `webhooks` section shows, signed like every delivery, seen by no other
// endpoint and in no other client's event feed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verify as verifyGithubSignature } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { testDialects } from '../helpers/databases.ts';
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

interface OpenApiWebhook {
  post: { requestBody: { content: { 'application/json': { example: { Type: string; Data: unknown } } } } };
}

for (const dialect of testDialects()) {
  describe(`test events [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    let otherToken: string;
    let webhooks: Record<string, OpenApiWebhook>;
    const receivers: TestReceiver[] = [];
    before(async () => {
      server = await startServer(dialect, LOCAL_WEBHOOKS_ENV);
      token = await server.issuer.clientToken(WEBHOOK_SCOPES, 'test-events-client');
      otherToken = await server.issuer.clientToken(WEBHOOK_SCOPES, 'test-events-other');
      webhooks = (await call(server.url, 'GET', '/openapi.json')).json.webhooks;
    });
    after(async () => {
      await Promise.all(receivers.map((r) => r.close()));
      await server.close();
    });

    const endpoint = async (as: string, events: string[]) => {
      const r = await startReceiver();
      receivers.push(r);
      const created = await registerEndpoint(server, as, r.url, events);
      return { receiver: r, id: created.json.Id as string, secret: created.json.Secret as string };
    };
    const sendTest = (id: string, body: unknown, as = token) =>
      call(server.url, 'POST', `/api/webhooks/${id}/test-events`, { token: as, body });
    const deliveriesOf = async (id: string, as: string) => {
      const res = await call(server.url, 'GET', `/api/webhooks/${id}/deliveries?limit=100`, { token: as });
      assert.equal(res.status, 200, res.text);
      return res.json.Items as { Id: string; EventId: string; EventType: string }[];
    };
    const feed = async (as: string) => {
      const res = await call(server.url, 'GET', '/api/events?limit=500', { token: as });
      assert.equal(res.status, 200, res.text);
      return res.json.Items as { Id: string; Type: string; Data: unknown }[];
    };

    test('every catalogue type arrives signed, with the example Data of the OpenAPI webhooks section', async () => {
      // Subscribed to webhook.ping only: a test event is addressed to the endpoint whatever it subscribes to.
      const { receiver, id, secret } = await endpoint(token, ['webhook.ping']);
      const types = Object.keys(webhooks);
      assert.ok(types.includes('order.paid') && types.length >= 9, `webhooks: ${types.join(', ')}`);
      for (const [index, type] of types.entries()) {
        const res = await sendTest(id, { Type: type });
        assert.equal(res.status, 202, res.text);
        assert.equal(res.json.EventType, type);
        assert.equal(res.headers.get('location'), res.json._links.self.href, res.text);
        const [got] = (await receiver.waitFor(index + 1)).slice(index);
        const { headers, body } = got!;
        const sent = JSON.parse(body) as { Id: string; Type: string; Data: unknown };
        const example = webhooks[type]!.post.requestBody.content['application/json'].example;
        assert.equal(sent.Type, type, body);
        assert.equal(example.Type, type);
        assert.deepEqual(sent.Data, example.Data, `${type}: ${body}`);
        assert.equal(headers['x-service-delivery'], res.json.Id);
        assert.equal(headers['x-service-event'], type);
        assert.equal(
          await verifyGithubSignature(secret, body, String(headers['x-service-signature-256'])),
          true,
          'GitHub-style signature',
        );
        // Throws unless a webhook-signature verifies over webhook-id, webhook-timestamp and the body.
        new Webhook(secret.slice('whsec_'.length)).verify(body, {
          'webhook-id': String(headers['webhook-id']),
          'webhook-timestamp': String(headers['webhook-timestamp']),
          'webhook-signature': String(headers['webhook-signature']),
        });
      }
    });

    test('only that endpoint gets it, and only its client sees the event', async () => {
      const target = await endpoint(token, ['*']);
      const sibling = await endpoint(token, ['*']);
      const stranger = await endpoint(otherToken, ['*']);
      const res = await sendTest(target.id, { Type: 'order.shipped' });
      assert.equal(res.status, 202, res.text);
      const eventId = res.json.EventId as string;
      await target.receiver.waitFor(1);
      // Deliveries are written with their event in one transaction: none listed now means none ever.
      assert.deepEqual(
        (await deliveriesOf(target.id, token)).map((d) => d.EventId),
        [eventId],
      );
      assert.deepEqual(await deliveriesOf(sibling.id, token), []);
      assert.deepEqual(await deliveriesOf(stranger.id, otherToken), []);
      // And what did arrive at the sibling and the stranger: after a ping of each, only that ping.
      for (const [other, as] of [
        [sibling, token],
        [stranger, otherToken],
      ] as const) {
        const ping = await call(server.url, 'POST', `/api/webhooks/${other.id}/ping`, { token: as });
        assert.equal(ping.status, 202, ping.text);
        await waitUntil(
          async () => (await deliveriesOf(other.id, as)).length === 1 && other.receiver.received.length === 1,
          10_000,
          () => `the ping to ${other.id}: ${other.receiver.received.length} received`,
        );
        assert.equal(JSON.parse(other.receiver.received[0]!.body).Type, 'webhook.ping');
      }
      // The feed shows an event once every transaction that began before it has ended (PostgreSQL's snapshot
      // horizon is server-wide: another suite's open transaction delays it), so it is waited for, not read once.
      let own: Awaited<ReturnType<typeof feed>>[number] | undefined;
      await waitUntil(
        async () => (own = (await feed(token)).find((e) => e.Id === eventId)) !== undefined,
        15_000,
        () => `test event ${eventId} not in the caller's feed`,
      );
      assert.equal(own?.Type, 'order.shipped', 'the calling client reads its test event');
      assert.equal(
        (await feed(otherToken)).some((e) => e.Id === eventId),
        false,
        "another client's feed",
      );
      const userFeed = await call(server.url, 'GET', '/api/events?limit=500', {
        token: await server.issuer.userToken('events:read'),
      });
      assert.equal(userFeed.status, 200, userFeed.text);
      assert.equal(userFeed.text.includes(eventId), false, "a user's feed");
    });

    test('problems: unknown type 422 with a pointer, unknown or foreign endpoint 404, disabled 409, malformed body 422', async () => {
      const { id } = await endpoint(token, ['*']);
      for (const type of ['order.refunded', '*']) {
        const res = await sendTest(id, { Type: type });
        assert.equal(res.status, 422, res.text);
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, res.text);
        assert.equal(res.json.errors[0].pointer, '/Type', res.text);
      }
      const missing = await sendTest('whep_' + '0'.repeat(32), { Type: 'order.paid' });
      assert.equal(missing.status, 404, missing.text);
      const foreign = await sendTest(id, { Type: 'order.paid' }, otherToken);
      assert.equal(foreign.status, 404, foreign.text);
      for (const body of [{}, { Type: 'order.paid', Data: {} }, { Type: 7 }]) {
        const res = await sendTest(id, body);
        assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
        assert.ok(res.json.errors.length > 0, res.text);
      }
      const noToken = await call(server.url, 'POST', `/api/webhooks/${id}/test-events`, {
        body: { Type: 'order.paid' },
      });
      assert.equal(noToken.status, 401, noToken.text);
      const readOnly = await sendTest(id, { Type: 'order.paid' }, await server.issuer.clientToken('events:read'));
      assert.equal(readOnly.status, 403, readOnly.text);
      const disable = await call(server.url, 'PATCH', `/api/webhooks/${id}`, { token, body: { Enabled: false } });
      assert.equal(disable.status, 200, disable.text);
      const disabled = await sendTest(id, { Type: 'order.paid' });
      assert.equal(disabled.status, 409, disabled.text);
      assert.match(disabled.json.detail, /disabled/);
      assert.deepEqual(await deliveriesOf(id, token), [], 'no refused request queued a delivery');
    });
  });
}
