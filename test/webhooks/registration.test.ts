// Webhook endpoint registration over real HTTP: the created resource and its secret, validation, the
// SSRF guard at registration and at dispatch, tenant isolation, scopes, PATCH/DELETE, secret rotation
// with its overlap, ping, secrets sealed at rest and the per-client endpoint limit. Both dialects.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { MAX_ENDPOINTS_PER_OWNER } from '../../src/webhooks/api/endpoints.service.ts';
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
import { expectProblem, expectStatus } from '../helpers/expect.ts';

const MERGE = 'application/merge-patch+json';
const SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]{43}=$/;
/** A consumer-chosen secret: `whsec_` + base64 of 32 bytes. */
const chosenSecret = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString('base64')}`;

/** A receiver that also remembers the request path of each delivery, so tests can tell endpoints apart. */
interface PathReceiver extends TestReceiver {
  paths: string[];
  at(path: string): ReceivedDelivery[];
}

async function startPathReceiver(): Promise<PathReceiver> {
  const receiver = (await startReceiver()) as PathReceiver;
  receiver.paths = [];
  receiver.answer = (request, index) => {
    receiver.paths[index] = request.url ?? '';
    return { status: 200 };
  };
  receiver.at = (path) => receiver.received.filter((_, i) => receiver.paths[i] === path);
  return receiver;
}

function problemType(res: CallResult): string {
  return (
    String(res.json?.type ?? '')
      .split('/')
      .at(-1) ?? ''
  );
}

function assertValidation(res: CallResult, pointer: string, label: string): void {
  expectProblem(res, 422, 'validation-error', label);
  assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8', label);
  const pointers = (res.json.errors as { pointer: string }[]).map((e) => e.pointer);
  assert.ok(
    pointers.includes(pointer),
    `${label}: expected pointer ${pointer}, got ${JSON.stringify(res.json.errors)}`,
  );
}

/** Polls the delivery log until the delivery has left `pending`; returns it with its attempts. */
async function settledDelivery(server: TestServer, token: string, id: string): Promise<CallResult> {
  let res: CallResult | undefined;
  await waitUntil(
    async () => {
      res = await call(server.url, 'GET', `/api/webhooks/deliveries/${id}`, { token });
      return res.status === 200 && res.json.State !== 'pending';
    },
    10_000,
    () => `delivery ${id} still ${res?.json?.State}`,
  );
  return res!;
}

function headerOf(delivery: ReceivedDelivery, name: string): string {
  const value = delivery.headers[name.toLowerCase()];
  assert.equal(typeof value, 'string', `header ${name}`);
  return value as string;
}

function standardHeaders(delivery: ReceivedDelivery): Record<string, string> {
  return {
    'webhook-id': headerOf(delivery, 'webhook-id'),
    'webhook-timestamp': headerOf(delivery, 'webhook-timestamp'),
    'webhook-signature': headerOf(delivery, 'webhook-signature'),
  };
}

function standardVerifies(secret: string, delivery: ReceivedDelivery): boolean {
  try {
    new Webhook(secret).verify(delivery.body, standardHeaders(delivery));
    return true;
  } catch {
    return false;
  }
}

for (const dialect of testDialects()) {
  describe(`webhook registration [${dialect}]`, () => {
    let server: TestServer;
    let receiver: PathReceiver;
    let token: string;
    before(async () => {
      server = await startServer(dialect, LOCAL_WEBHOOKS_ENV);
      receiver = await startPathReceiver();
      token = await server.issuer.clientToken(WEBHOOK_SCOPES);
    });
    after(async () => {
      await receiver.close();
      await server.close();
    });

    const register = (body: unknown, tok = token) => call(server.url, 'POST', '/api/webhooks', { token: tok, body });
    const ping = async (id: string, tok = token): Promise<CallResult> => {
      const res = await call(server.url, 'POST', `/api/webhooks/${id}/ping`, { token: tok });
      assert.equal(res.status, 202, res.text);
      return res;
    };
    /** Pings and waits for that very delivery (by X-Service-Delivery) to arrive. */
    const pingAndReceive = async (id: string, tok = token): Promise<ReceivedDelivery> => {
      const deliveryId = (await ping(id, tok)).json.Id as string;
      await waitUntil(
        () => receiver.received.some((d) => d.headers['x-service-delivery'] === deliveryId),
        10_000,
        () => `ping delivery ${deliveryId} never arrived`,
      );
      return receiver.received.find((d) => d.headers['x-service-delivery'] === deliveryId)!;
    };

    test('POST /api/webhooks answers 201 with Location, a whep_ id, the event types and a generated whsec_ secret of 32 bytes', async () => {
      const res = await register({
        Url: `${receiver.url}/created`,
        Events: ['order.created', 'order.paid'],
        Description: 'orders feed',
      });
      assert.equal(res.status, 201, res.text);
      assert.match(res.json.Id, /^whep_[0-9a-f]{32}$/);
      assert.equal(res.headers.get('location'), `${server.url}/api/webhooks/${res.json.Id}`);
      assert.equal(res.headers.get('cache-control'), 'no-store', 'the secret is not cached anywhere');
      assert.match(res.json.Secret, SECRET_FORMAT);
      assert.equal(Buffer.from(res.json.Secret.slice('whsec_'.length), 'base64').length, 32);
      assert.deepEqual(res.json.Events, ['order.created', 'order.paid']);
      assert.equal(res.json.Url, `${receiver.url}/created`);
      assert.equal(res.json.Description, 'orders feed');
      assert.equal(res.json.Enabled, true);
      assert.equal(res.json.DisabledReason, null);
      assert.equal(res.json.PreviousSecretExpiresAtUtc, null);

      const other = await register({ Url: `${receiver.url}/created-2`, Events: ['*'] });
      assert.notEqual(other.json.Secret, res.json.Secret, 'every endpoint gets its own secret');
      assert.notEqual(other.json.Id, res.json.Id);
    });

    test('GET and the list never return the secret', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/no-secret`, ['order.created']);
      const one = await call(server.url, 'GET', `/api/webhooks/${created.json.Id}`, { token });
      expectStatus(one, 200);
      assert.equal(one.json.Id, created.json.Id);
      assert.equal(one.json.Url, `${receiver.url}/no-secret`);
      assert.ok(!('Secret' in one.json), one.text);
      assert.ok(!one.text.includes(created.json.Secret));
      const { Secret: _secret, ...withoutSecret } = created.json;
      assert.deepEqual(one.json, withoutSecret, 'GET shows what the POST showed, minus the secret');

      const list = await call(server.url, 'GET', '/api/webhooks', { token });
      expectStatus(list, 200);
      const listed = (list.json.Items as { Id: string }[]).find((e) => e.Id === created.json.Id);
      assert.ok(listed, 'the endpoint is listed');
      for (const item of list.json.Items) assert.ok(!('Secret' in item), JSON.stringify(item));
      assert.ok(!list.text.includes('whsec_'), 'no secret anywhere in the list');
    });

    test('a consumer-chosen Secret is accepted and signs the deliveries', async () => {
      const secret = chosenSecret(1);
      const res = await register({ Url: `${receiver.url}/chosen`, Events: ['*'], Secret: secret });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.json.Secret, secret);
      const delivery = await pingAndReceive(res.json.Id);
      assert.ok(await githubVerify(secret, delivery.body, headerOf(delivery, 'x-service-signature-256')));
      assert.ok(standardVerifies(secret, delivery));
    });

    test('an invalid registration is a 422 problem whose errors point at the member', async () => {
      const url = `${receiver.url}/invalid`;
      const cases: [string, unknown, string][] = [
        ['unknown event type', { Url: url, Events: ['order.exploded'] }, '/Events/0'],
        ['unknown type after known ones', { Url: url, Events: ['order.created', 'order.paid', 'nope'] }, '/Events/2'],
        [
          'unknown type after a repeated one',
          { Url: url, Events: ['order.created', 'order.created', 'nope'] },
          '/Events/2',
        ],
        ['"*" with other types', { Url: url, Events: ['*', 'order.created'] }, '/Events'],
        ['no event types', { Url: url, Events: [] }, '/Events'],
        [
          'credentials in the URL',
          { Url: `http://user:pass@127.0.0.1:${new URL(receiver.url).port}/x`, Events: ['*'] },
          '/Url',
        ],
        ['a fragment', { Url: `${url}#part`, Events: ['*'] }, '/Url'],
        ['not a URL', { Url: 'not a url', Events: ['*'] }, '/Url'],
        ['another scheme', { Url: 'ftp://example.com/hook', Events: ['*'] }, '/Url'],
        ['a too long URL', { Url: `https://example.com/${'a'.repeat(2100)}`, Events: ['*'] }, '/Url'],
        [
          'a secret without the prefix',
          { Url: url, Events: ['*'], Secret: Buffer.alloc(32, 1).toString('base64') },
          '/Secret',
        ],
        ['a secret that is not base64', { Url: url, Events: ['*'], Secret: 'whsec_not base64!' }, '/Secret'],
        [
          'a secret of 16 bytes',
          { Url: url, Events: ['*'], Secret: `whsec_${Buffer.alloc(16, 1).toString('base64')}` },
          '/Secret',
        ],
        [
          'a secret in base64url',
          { Url: url, Events: ['*'], Secret: `whsec_${Buffer.alloc(32, 0xfb).toString('base64url')}` },
          '/Secret',
        ],
        ['a missing Url', { Events: ['*'] }, '/Url'],
        ['missing Events', { Url: url }, '/Events'],
        ['an unknown member', { Url: url, Events: ['*'], Colour: 'blue' }, '/Colour'],
        ['a Url that is not a string', { Url: 42, Events: ['*'] }, '/Url'],
      ];
      const before = (await call(server.url, 'GET', '/api/webhooks', { token })).json.Items.length;
      for (const [label, body, pointer] of cases) assertValidation(await register(body), pointer, label);
      const both = await register({ Url: `${url}#x`, Events: ['bogus'], Secret: 'whsec_x' });
      for (const pointer of ['/Url', '/Events/0', '/Secret']) assertValidation(both, pointer, 'every problem at once');
      assert.equal(
        (await call(server.url, 'GET', '/api/webhooks', { token })).json.Items.length,
        before,
        'nothing was registered',
      );
    });

    test('U+0000 and other control characters in Description or Url are a 422 at the member, not a database error', async () => {
      const url = `${receiver.url}/control`;
      assertValidation(
        await register({ Url: url, Events: ['*'], Description: 'a\u0000b' }),
        '/Description',
        'NUL in Description',
      );
      assertValidation(
        await register({ Url: url, Events: ['*'], Description: 'line\u001bline' }),
        '/Description',
        'ESC in Description',
      );
      assertValidation(await register({ Url: 'https://example.com/x\u0000', Events: ['*'] }), '/Url', 'NUL in Url');
      const created = await registerEndpoint(server, token, url, ['*'], { Description: 'plain' });
      const patch = (body: unknown) =>
        call(server.url, 'PATCH', `/api/webhooks/${created.json.Id}`, { token, body, contentType: MERGE });
      assertValidation(await patch({ Description: '\u0000' }), '/Description', 'PATCH Description NUL');
      assertValidation(await patch({ Url: `${url}\u0000` }), '/Url', 'PATCH Url NUL');
      assert.equal(
        (await call(server.url, 'GET', `/api/webhooks/${created.json.Id}`, { token })).json.Description,
        'plain',
        'unchanged',
      );
      assert.equal((await patch({ Description: 'ünïcode — fine' })).json.Description, 'ünïcode — fine');
    });

    test('a Url the URL parser would repair or that can never be reached is a 422; one it only normalises is stored as called', async () => {
      const port = new URL(receiver.url).port;
      const refused = [
        `  http://127.0.0.1:${port}/ok-ws  `,
        `http://127.0.0.1:${port}/o\nk-nl`,
        `http://127.0.0.1:${port}/o\tk-tab`,
        `http://exa\tmple.com/x`,
        `http:127.0.0.1:${port}/ok-noslash`,
        `http://@127.0.0.1:${port}/ok-emptyuser`,
        'https://:@example.com/x',
        `http://127.0.0.1:${port}/ok-emptyfrag#`,
        'https://example.com:0/x',
        `https://${'a'.repeat(300)}.example/x`,
        `https://${'a'.repeat(70)}.example/x`,
      ];
      for (const Url of refused) assertValidation(await register({ Url, Events: ['*'] }), '/Url', JSON.stringify(Url));

      const created = await register({ Url: `HTTP://127.0.0.1:${port}/Other/../normalised`, Events: ['*'] });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.json.Url, `http://127.0.0.1:${port}/normalised`, 'stored as the parser serialises it');
      assert.equal(
        (await call(server.url, 'GET', `/api/webhooks/${created.json.Id}`, { token })).json.Url,
        created.json.Url,
      );
      const delivery = await pingAndReceive(created.json.Id);
      assert.equal(JSON.parse(delivery.body).Data.Url, created.json.Url);
      assert.equal(receiver.at('/normalised').length, 1, 'and that is the URL called');
    });

    test('a deliveries cursor this service did not issue is a 400 invalid-parameter, whatever it holds', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/cursor`, ['*']);
      const id = created.json.Id as string;
      await ping(id);
      await ping(id);
      const list = (query: string) => call(server.url, 'GET', `/api/webhooks/${id}/deliveries?${query}`, { token });
      const first = await list('limit=1');
      assert.equal(first.status, 200, first.text);
      const next = new URL(first.json._links.next.href);
      const issued = JSON.parse(Buffer.from(next.searchParams.get('cursor')!, 'base64url').toString()) as {
        t: number;
        i: string;
      };
      assert.equal(
        (await list(`limit=1&cursor=${next.searchParams.get('cursor')}`)).status,
        200,
        'an issued cursor works',
      );

      const forged = (payload: unknown) => Buffer.from(JSON.stringify(payload)).toString('base64url');
      for (const payload of [
        { t: 1, i: 'a\u0000' },
        { t: issued.t, i: 'x' },
        { t: issued.t, i: `${issued.i}\u0000` },
        { t: 1e300, i: issued.i },
        { t: -1e20, i: issued.i },
        { t: issued.t + 0.5, i: issued.i },
      ]) {
        const res = await list(`cursor=${forged(payload)}`);
        assert.equal(res.status, 400, `${JSON.stringify(payload)}: ${res.text}`);
        assert.equal(problemType(res), 'invalid-parameter');
      }
    });

    test('recover refuses a Since that passes date-time but no database can store (a leap second, year 0000) with a 422 at /Since', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/recover-dates`, ['*']);
      const recover = (Since: string) =>
        call(server.url, 'POST', `/api/webhooks/${created.json.Id}/recover`, { token, body: { Since } });
      for (const since of [
        '2016-12-31T23:59:60Z',
        '2026-06-30T22:59:60-01:00',
        '0000-01-01T00:00:00Z',
        '0001-01-01T00:00:00+01:00',
      ])
        assertValidation(await recover(since), '/Since', since);
      const fine = await recover('0001-01-01T00:00:00Z');
      assert.equal(fine.status, 202, fine.text);
      assert.deepEqual(fine.json, { Requeued: 0 });
    });

    test('limit takes decimal digits only on the deliveries and event lists (0x10, 1e2 are a 400)', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/limits`, ['*']);
      for (const path of [`/api/webhooks/${created.json.Id}/deliveries`, '/api/events']) {
        for (const limit of ['0x10', '1e2', '+5', ' 5', '5.0']) {
          const res = await call(server.url, 'GET', `${path}?limit=${encodeURIComponent(limit)}`, { token });
          assert.equal(res.status, 400, `${path} limit=${limit}: ${res.text}`);
          assert.equal(problemType(res), 'invalid-parameter');
        }
        expectStatus(await call(server.url, 'GET', `${path}?limit=10`, { token }), 200, path);
      }
    });

    test('a body that is not JSON is a 400 problem', async () => {
      const res = await call(server.url, 'POST', '/api/webhooks', { token, rawBody: '{"Url": ' });
      expectStatus(res, 400);
      assert.equal(problemType(res), 'malformed-body');
      const none = await call(server.url, 'POST', '/api/webhooks', { token });
      assert.equal(none.status, 400, none.text);
    });

    test('http callbacks and literal non-public addresses are refused at registration by default', async () => {
      const strict = await startServer(dialect);
      try {
        const strictToken = await strict.issuer.clientToken(WEBHOOK_SCOPES);
        const post = (Url: string) =>
          call(strict.url, 'POST', '/api/webhooks', { token: strictToken, body: { Url, Events: ['*'] } });
        const http = await post('http://example.com/hook');
        assertValidation(http, '/Url', 'http without WEBHOOK_ALLOW_HTTP');
        assert.match(http.json.errors[0].detail, /https/);
        for (const host of [
          '127.0.0.1',
          '169.254.169.254',
          '10.0.0.1',
          '192.168.0.10',
          '172.16.5.4',
          '[::1]',
          '[fd00:ec2::254]',
          '[fe80::1]',
          '[::ffff:127.0.0.1]',
          '[::127.0.0.1]',
          '[::a9fe:a9fe]',
          '0.0.0.0',
          '2130706433',
        ]) {
          assertValidation(await post(`https://${host}/hook`), '/Url', host);
        }
        const fine = await post('https://example.com/hook');
        expectStatus(fine, 201, 'a public host name is accepted (checked again at every connection)');
      } finally {
        await strict.close();
      }
    });

    test('WEBHOOK_ALLOWED_NETWORKS=loopback allows loopback addresses, and only those', async () => {
      for (const host of ['127.0.0.1', '[::1]', 'localhost']) {
        const res = await register({ Url: `http://${host}:9/hook`, Events: ['order.created'] });
        assert.equal(res.status, 201, `${host}: ${res.text}`);
        expectStatus(await call(server.url, 'DELETE', `/api/webhooks/${res.json.Id}`, { token }), 204);
      }
      for (const host of ['169.254.169.254', '10.0.0.1', '[fd00:ec2::254]'])
        assertValidation(await register({ Url: `https://${host}/hook`, Events: ['*'] }), '/Url', host);
    });

    test('SSRF at dispatch: a host name resolving to loopback is refused when connecting unless loopback is allowed', async () => {
      const guarded = await startServer(dialect, {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_RETRY_SCHEDULE: '0s',
        WEBHOOK_POLL_INTERVAL: '100ms',
      });
      try {
        const guardedToken = await guarded.issuer.clientToken(WEBHOOK_SCOPES);
        const url = `http://localhost:${new URL(receiver.url).port}/by-name-refused`;
        const endpoint = await registerEndpoint(guarded, guardedToken, url, ['*']);
        expectStatus(endpoint, 201, 'a host name passes registration: it is checked at connection time');
        const pinged = await call(guarded.url, 'POST', `/api/webhooks/${endpoint.json.Id}/ping`, {
          token: guardedToken,
        });
        assert.equal(pinged.status, 202, pinged.text);
        const delivery = await settledDelivery(guarded, guardedToken, pinged.json.Id);
        assert.equal(delivery.json.State, 'failed');
        assert.equal(delivery.json.Attempts.length, 1);
        assert.equal(delivery.json.Attempts[0].ErrorKind, 'refused_address', JSON.stringify(delivery.json.Attempts));
        assert.equal(delivery.json.Attempts[0].StatusCode, null);
        assert.match(delivery.json.Attempts[0].ErrorDetail, /localhost/);
        assert.equal(receiver.at('/by-name-refused').length, 0, 'nothing reached the receiver');
      } finally {
        await guarded.close();
      }
      assert.equal(receiver.at('/by-name-refused').length, 0, 'nothing reached the receiver');

      const allowedUrl = `http://localhost:${new URL(receiver.url).port}/by-name-allowed`;
      const allowed = await registerEndpoint(server, token, allowedUrl, ['*']);
      const pinged = await ping(allowed.json.Id);
      await waitUntil(
        () => receiver.at('/by-name-allowed').length === 1,
        10_000,
        () => 'the ping to localhost never arrived',
      );
      const delivery = await settledDelivery(server, token, pinged.json.Id);
      assert.equal(delivery.json.State, 'succeeded');
      assert.equal(delivery.json.Attempts[0].ErrorKind, null);
      assert.equal(delivery.json.Attempts[0].StatusCode, 200);
    });

    test("another client cannot see, change, ping, rotate or read the deliveries of a client's endpoint", async () => {
      const endpoint = await registerEndpoint(server, token, `${receiver.url}/tenant-a`, ['*']);
      const id = endpoint.json.Id as string;
      const delivery = await ping(id);
      const other = await server.issuer.clientToken(WEBHOOK_SCOPES, 'other-client');
      const requests: [string, string, unknown?][] = [
        ['GET', `/api/webhooks/${id}`],
        ['PATCH', `/api/webhooks/${id}`, { Description: 'mine now' }],
        ['POST', `/api/webhooks/${id}/ping`],
        ['POST', `/api/webhooks/${id}/rotate-secret`, {}],
        ['POST', `/api/webhooks/${id}/recover`, { Since: new Date(Date.now() - 60_000).toISOString() }],
        ['GET', `/api/webhooks/${id}/deliveries`],
        ['GET', `/api/webhooks/deliveries/${delivery.json.Id}`],
        ['POST', `/api/webhooks/deliveries/${delivery.json.Id}/redeliver`],
        ['DELETE', `/api/webhooks/${id}`],
      ];
      for (const [method, path, body] of requests) {
        const res = await call(server.url, method, path, {
          token: other,
          body,
          contentType: method === 'PATCH' ? MERGE : undefined,
        });
        assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
        assert.equal(problemType(res), 'not-found');
      }
      const list = await call(server.url, 'GET', '/api/webhooks', { token: other });
      expectStatus(list, 200);
      assert.deepEqual(list.json.Items, []);

      const mine = await call(server.url, 'GET', `/api/webhooks/${id}`, { token });
      expectStatus(mine, 200, 'the owner still has it');
      assert.equal(mine.json.Description, '', 'unchanged');
      assert.equal(mine.json.PreviousSecretExpiresAtUtc, null, 'not rotated');
    });

    test('webhook management needs webhooks:manage (403), a token (401), and a client-credentials token', async () => {
      const endpoint = await registerEndpoint(server, token, `${receiver.url}/scopes`, ['*']);
      const id = endpoint.json.Id as string;
      const noScope = await server.issuer.clientToken('orders:read orders:write events:read');
      const routes: [string, string, unknown?][] = [
        ['POST', '/api/webhooks', { Url: `${receiver.url}/x`, Events: ['*'] }],
        ['GET', '/api/webhooks'],
        ['GET', `/api/webhooks/${id}`],
        ['PATCH', `/api/webhooks/${id}`, { Enabled: false }],
        ['DELETE', `/api/webhooks/${id}`],
        ['POST', `/api/webhooks/${id}/ping`],
        ['POST', `/api/webhooks/${id}/rotate-secret`, {}],
        ['GET', `/api/webhooks/${id}/deliveries`],
      ];
      for (const [method, path, body] of routes) {
        const contentType = method === 'PATCH' ? MERGE : undefined;
        const forbidden = await call(server.url, method, path, { token: noScope, body, contentType });
        expectStatus(forbidden, 403, `${method} ${path}`);
        assert.equal(problemType(forbidden), 'insufficient-scope');
        assert.match(forbidden.headers.get('www-authenticate') ?? '', /insufficient_scope/);
        const anonymous = await call(server.url, method, path, { body, contentType });
        expectStatus(anonymous, 401, `${method} ${path}`);
        assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
      // An end user's token names the client it was issued to, but an endpoint receives every
      // customer's order events: a user must not register one (nor see the client's).
      const user = await server.issuer.userToken(WEBHOOK_SCOPES, CUSTOMER);
      const byUser = await register({ Url: `${receiver.url}/user`, Events: ['*'] }, user);
      assert.equal(byUser.status, 403, byUser.text);
      assert.equal(problemType(byUser), 'forbidden');
      assert.equal(
        (await register({ Url: 'not a url', Events: [] }, user)).status,
        403,
        'refused before the body is judged',
      );
      expectStatus(await call(server.url, 'GET', '/api/webhooks', { token: user }), 403);
      expectStatus(await call(server.url, 'GET', `/api/webhooks/${id}`, { token: user }), 403);
      expectStatus(await call(server.url, 'GET', `/api/webhooks/${id}`, { token }), 200, 'the endpoint is untouched');
    });

    test('PATCH changes Url, Events and Description; a disabled endpoint receives nothing until enabled again', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/patch-1`, ['order.paid'], {
        Description: 'first',
      });
      const id = created.json.Id as string;
      const patch = (body: unknown) =>
        call(server.url, 'PATCH', `/api/webhooks/${id}`, { token, body, contentType: MERGE });

      const changed = await patch({ Url: `${receiver.url}/patch-2`, Events: ['order.created'], Description: 'second' });
      assert.equal(changed.status, 200, changed.text);
      assert.equal(changed.json.Url, `${receiver.url}/patch-2`);
      assert.deepEqual(changed.json.Events, ['order.created']);
      assert.equal(changed.json.Description, 'second');
      assert.ok(Date.parse(changed.json.UpdatedAtUtc) >= Date.parse(created.json.UpdatedAtUtc));
      assert.deepEqual(
        (await call(server.url, 'GET', `/api/webhooks/${id}`, { token })).json,
        changed.json,
        'a GET shows the change',
      );
      assert.equal((await patch({ Description: null })).json.Description, '', 'null removes the description');

      const disabled = await patch({ Enabled: false });
      expectStatus(disabled, 200);
      assert.equal(disabled.json.Enabled, false);
      assert.equal(disabled.json.DisabledReason, 'manual');
      assert.equal(disabled.json._links.ping, undefined, 'a disabled endpoint offers no ping');
      const refusedPing = await call(server.url, 'POST', `/api/webhooks/${id}/ping`, { token });
      expectStatus(refusedPing, 409);
      assert.equal(problemType(refusedPing), 'webhook-state');

      const whileDisabled = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
      });
      expectStatus(whileDisabled, 201);
      const deliveriesWhileDisabled = await call(server.url, 'GET', `/api/webhooks/${id}/deliveries`, { token });
      assert.deepEqual(deliveriesWhileDisabled.json.Items, [], 'no delivery is even queued for a disabled endpoint');

      const enabled = await patch({ Enabled: true });
      assert.equal(enabled.json.Enabled, true);
      assert.equal(enabled.json.DisabledReason, null);
      const afterEnabling = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 2 },
      });
      await waitUntil(
        () => receiver.at('/patch-2').length >= 1,
        10_000,
        () => 'no delivery after enabling',
      );
      const orderIds = receiver.at('/patch-2').map((d) => JSON.parse(d.body).Data.Id as number);
      assert.deepEqual(orderIds, [afterEnabling.json.Id], 'only the order created while enabled was delivered');
      assert.equal(receiver.at('/patch-1').length, 0, 'the old URL got nothing');

      assertValidation(
        await patch({ Url: 'https://10.0.0.1/hook' }),
        '/Url',
        'PATCH Url is checked like a registration',
      );
      assertValidation(
        await patch({ Events: ['order.exploded'] }),
        '/Events/0',
        'PATCH Events is checked like a registration',
      );
      const unknownMember = await patch({ Secret: chosenSecret(9) });
      expectStatus(unknownMember, 422, 'the secret changes only by rotation');
      assert.equal(problemType(unknownMember), 'validation-error');
      expectStatus(await patch({}), 422, 'an empty patch changes nothing and says so');
      expectStatus(await patch({ Enabled: 'yes' }), 422);
    });

    test('DELETE answers 204, then the endpoint is gone (404) and receives nothing more', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/deleted`, ['*']);
      const id = created.json.Id as string;
      const pinged = await ping(id);
      await waitUntil(() => receiver.at('/deleted').length === 1, 10_000);
      const deleted = await call(server.url, 'DELETE', `/api/webhooks/${id}`, { token });
      expectStatus(deleted, 204);
      assert.equal(deleted.text, '');
      expectStatus(await call(server.url, 'GET', `/api/webhooks/${id}`, { token }), 404);
      expectStatus(await call(server.url, 'DELETE', `/api/webhooks/${id}`, { token }), 404);
      expectStatus(await call(server.url, 'POST', `/api/webhooks/${id}/ping`, { token }), 404);
      expectStatus(
        await call(server.url, 'GET', `/api/webhooks/deliveries/${pinged.json.Id}`, { token }),
        404,
        'its delivery log went with it',
      );
      assert.ok(
        !(await call(server.url, 'GET', '/api/webhooks', { token })).json.Items.some(
          (e: { Id: string }) => e.Id === id,
        ),
      );

      // Receives nothing more: an order event it subscribed to ('*') goes to a witness endpoint instead.
      // Deliveries go out in the order they were queued, so once the witness has that event and a ping
      // queued after it, anything queued for the deleted endpoint would have arrived as well.
      const witness = await registerEndpoint(server, token, `${receiver.url}/deleted-witness`, ['*']);
      const order = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 3 } });
      expectStatus(order, 201);
      await waitUntil(
        () => receiver.at('/deleted-witness').some((d) => JSON.parse(d.body).Data?.Id === order.json.Id),
        10_000,
        () => 'the order event never reached the witness endpoint',
      );
      await pingAndReceive(witness.json.Id as string);
      assert.deepEqual(
        receiver.at('/deleted').map((d) => d.headers['x-service-delivery']),
        [pinged.json.Id],
        'only the ping from before the DELETE reached the deleted endpoint',
      );
      expectStatus(await call(server.url, 'DELETE', `/api/webhooks/${witness.json.Id}`, { token }), 204);
    });

    test('a malformed endpoint or delivery id is a 400 problem', async () => {
      for (const path of [
        '/api/webhooks/whep_nothex',
        '/api/webhooks/42',
        '/api/webhooks/deliveries/dlv_x',
        '/api/webhooks/whep_0123/deliveries',
      ]) {
        const res = await call(server.url, 'GET', path, { token });
        expectStatus(res, 400, path);
        assert.equal(problemType(res), 'invalid-parameter', path);
      }
    });

    test('rotate-secret returns a new secret; during the overlap the new one signs X-Service-Signature-256 and both sign webhook-signature', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/rotate`, ['order.created']);
      const id = created.json.Id as string;
      const oldSecret = created.json.Secret as string;
      const rotated = await call(server.url, 'POST', `/api/webhooks/${id}/rotate-secret`, { token });
      assert.equal(rotated.status, 200, rotated.text);
      assert.equal(rotated.headers.get('cache-control'), 'no-store');
      const newSecret = rotated.json.Secret as string;
      assert.match(newSecret, SECRET_FORMAT);
      assert.notEqual(newSecret, oldSecret);
      const overlapEnds = Date.parse(rotated.json.PreviousSecretExpiresAtUtc);
      assert.ok(
        Math.abs(overlapEnds - (Date.now() + 24 * 3_600_000)) < 60_000,
        `the default overlap is 24 h: ${rotated.json.PreviousSecretExpiresAtUtc}`,
      );
      assert.equal(
        (await call(server.url, 'GET', `/api/webhooks/${id}`, { token })).json.PreviousSecretExpiresAtUtc,
        rotated.json.PreviousSecretExpiresAtUtc,
      );

      const delivery = await pingAndReceive(id);
      const github = headerOf(delivery, 'x-service-signature-256');
      assert.ok(await githubVerify(newSecret, delivery.body, github), 'the GitHub-style signature uses the new secret');
      assert.equal(await githubVerify(oldSecret, delivery.body, github), false);
      const signatures = headerOf(delivery, 'webhook-signature').split(' ');
      assert.equal(signatures.length, 2, 'one v1 signature per active secret');
      for (const s of signatures) assert.match(s, /^v1,[A-Za-z0-9+/]+={0,2}$/);
      assert.ok(standardVerifies(newSecret, delivery), 'standardwebhooks verifies with the new secret');
      assert.ok(standardVerifies(oldSecret, delivery), 'and, during the overlap, with the old one');
      assert.equal(standardVerifies(chosenSecret(77), delivery), false, 'but not with any secret');

      // A second rotation during the overlap would end it early for whoever still holds the oldest secret.
      const early = await call(server.url, 'POST', `/api/webhooks/${id}/rotate-secret`, {
        token,
        body: { Secret: chosenSecret(3) },
      });
      assert.equal(early.status, 409, early.text);
      assert.match(early.json.type, /\/webhook-state$/);
      assert.match(
        early.json.detail,
        new RegExp(`overlap until ${rotated.json.PreviousSecretExpiresAtUtc.replace(/[.]/g, '\\.')}`),
      );
      const unchanged = await pingAndReceive(id);
      assert.ok(
        await githubVerify(newSecret, unchanged.body, headerOf(unchanged, 'x-service-signature-256')),
        'a refused rotation changed nothing',
      );
      assert.ok(standardVerifies(oldSecret, unchanged), 'and the overlap still runs');

      assertValidation(
        await call(server.url, 'POST', `/api/webhooks/${id}/rotate-secret`, { token, body: { Secret: 'whsec_short' } }),
        '/Secret',
        'an invalid chosen secret',
      );
      expectStatus(
        await call(server.url, 'POST', `/api/webhooks/${id}/rotate-secret`, { token, body: { Other: 1 } }),
        422,
      );
    });

    test('a consumer-chosen secret is taken as it is; concurrent rotations: one wins, the others are 409', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/rotate-chosen`, ['order.created']);
      const id = created.json.Id as string;
      const attempts = await Promise.all(
        [3, 4, 5, 6, 7].map((n) =>
          call(server.url, 'POST', `/api/webhooks/${id}/rotate-secret`, { token, body: { Secret: chosenSecret(n) } }),
        ),
      );
      assert.deepEqual(attempts.map((a) => a.status).sort(), [200, 409, 409, 409, 409]);
      const winner = attempts.find((a) => a.status === 200)!;
      const chosen = winner.json.Secret as string;
      assert.ok(
        [3, 4, 5, 6, 7].map((n) => chosenSecret(n)).includes(chosen),
        'a consumer-chosen secret is taken as it is',
      );
      const delivery = await pingAndReceive(id);
      assert.ok(await githubVerify(chosen, delivery.body, headerOf(delivery, 'x-service-signature-256')));
      assert.ok(standardVerifies(created.json.Secret, delivery), 'the secret it replaced signs during the overlap');
      for (const loser of [3, 4, 5, 6, 7].map((n) => chosenSecret(n)).filter((s) => s !== chosen))
        assert.equal(standardVerifies(loser, delivery), false, 'a refused rotation’s secret never signs');
    });

    test('with WEBHOOK_SECRET_OVERLAP=0s the previous secret stops signing at the rotation', async () => {
      const noOverlap = await startServer(dialect, { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_SECRET_OVERLAP: '0s' });
      try {
        const t = await noOverlap.issuer.clientToken(WEBHOOK_SCOPES);
        const created = await registerEndpoint(noOverlap, t, `${receiver.url}/no-overlap`, ['*']);
        const rotated = await call(noOverlap.url, 'POST', `/api/webhooks/${created.json.Id}/rotate-secret`, {
          token: t,
          body: {},
        });
        expectStatus(rotated, 200);
        assert.equal(
          (await call(noOverlap.url, 'GET', `/api/webhooks/${created.json.Id}`, { token: t })).json
            .PreviousSecretExpiresAtUtc,
          null,
          'no overlap to show',
        );
        const pinged = await call(noOverlap.url, 'POST', `/api/webhooks/${created.json.Id}/ping`, { token: t });
        expectStatus(pinged, 202);
        await waitUntil(() => receiver.at('/no-overlap').length === 1, 10_000);
        const [delivery] = receiver.at('/no-overlap');
        assert.equal(headerOf(delivery!, 'webhook-signature').split(' ').length, 1);
        assert.ok(standardVerifies(rotated.json.Secret, delivery!));
        assert.equal(standardVerifies(created.json.Secret, delivery!), false, 'the old secret no longer verifies');
        assert.ok(
          await githubVerify(rotated.json.Secret, delivery!.body, headerOf(delivery!, 'x-service-signature-256')),
        );
        const again = await call(noOverlap.url, 'POST', `/api/webhooks/${created.json.Id}/rotate-secret`, {
          token: t,
          body: {},
        });
        expectStatus(again, 200, 'with no overlap running, rotating again at once is allowed');
      } finally {
        await noOverlap.close();
      }
    });

    test('ping answers 202 with the delivery and sends a webhook.ping to that endpoint only', async () => {
      const first = await registerEndpoint(server, token, `${receiver.url}/ping-1`, ['*']);
      const second = await registerEndpoint(server, token, `${receiver.url}/ping-2`, ['*']);
      const res = await ping(first.json.Id);
      assert.match(res.json.Id, /^dlv_[0-9a-f]{32}$/);
      assert.equal(res.headers.get('location'), `${server.url}/api/webhooks/deliveries/${res.json.Id}`);
      assert.equal(res.json.EndpointId, first.json.Id);
      assert.equal(res.json.EventType, 'webhook.ping');
      assert.match(res.json.EventId, /^evt_[0-9a-f]{32}$/);

      await waitUntil(() => receiver.at('/ping-1').length === 1, 10_000);
      const [delivery] = receiver.at('/ping-1');
      const body = JSON.parse(delivery!.body);
      assert.equal(body.Type, 'webhook.ping');
      assert.equal(body.Id, res.json.EventId);
      assert.equal(body.Data.EndpointId, first.json.Id);
      assert.equal(body.Data.Url, `${receiver.url}/ping-1`);
      assert.equal(delivery!.headers['x-service-event'], 'webhook.ping');
      assert.equal(delivery!.headers['x-service-delivery'], res.json.Id);
      assert.ok(await githubVerify(first.json.Secret, delivery!.body, headerOf(delivery!, 'x-service-signature-256')));

      // The other endpoint subscribes to every type, yet the first ping did not reach it: its only delivery is its own ping.
      await ping(second.json.Id);
      await waitUntil(() => receiver.at('/ping-2').length === 1, 10_000);
      assert.equal(JSON.parse(receiver.at('/ping-2')[0]!.body).Data.EndpointId, second.json.Id);
      assert.equal(receiver.at('/ping-1').length, 1, 'the first endpoint got only its own ping');
      const log = await call(server.url, 'GET', `/api/webhooks/${second.json.Id}/deliveries`, { token });
      assert.equal(log.json.Items.length, 1);
      assert.equal(log.json.Items[0].EventType, 'webhook.ping');
    });

    test('ping reaches an endpoint that does not subscribe to webhook.ping', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/ping-unsubscribed`, ['order.shipped']);
      const res = await ping(created.json.Id);
      assert.equal(res.json.EndpointId, created.json.Id);
      await waitUntil(() => receiver.at('/ping-unsubscribed').length === 1, 10_000);
      assert.equal(JSON.parse(receiver.at('/ping-unsubscribed')[0]!.body).Data.EndpointId, created.json.Id);
    });

    test('secrets are sealed at rest (aes256gcm), never stored as they are', async () => {
      const created = await registerEndpoint(server, token, `${receiver.url}/sealed`, ['*'], {
        Secret: chosenSecret(5),
      });
      const rotated = await call(server.url, 'POST', `/api/webhooks/${created.json.Id}/rotate-secret`, { token });
      const row = await server.app.database.db
        .selectFrom('webhook_endpoints')
        .select(['secret', 'previous_secret'])
        .where('id', '=', created.json.Id)
        .executeTakeFirstOrThrow();
      for (const [column, stored, plain] of [
        ['secret', row.secret, rotated.json.Secret],
        ['previous_secret', row.previous_secret, created.json.Secret],
      ] as const) {
        assert.ok(stored, column);
        assert.match(stored, /^aes256gcm:/, column);
        assert.ok(!stored.includes(plain), `${column} does not contain the secret`);
        assert.ok(!stored.includes(plain.slice('whsec_'.length)), `${column} does not contain the secret's key`);
        assert.ok(!stored.includes(Buffer.from(plain.slice('whsec_'.length), 'base64').toString('hex')), column);
      }
      assert.notEqual(row.secret, row.previous_secret);
    });

    test(`a client may register at most ${MAX_ENDPOINTS_PER_OWNER} endpoints (409 limit-reached), however many requests race`, async () => {
      const busy = await server.issuer.clientToken(WEBHOOK_SCOPES, 'busy-client');
      const body = { Url: 'https://example.com/hook', Events: ['order.deleted'] };
      const raced = await Promise.all(Array.from({ length: 80 }, () => register(body, busy)));
      const statuses = raced.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 201).length, MAX_ENDPOINTS_PER_OWNER, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 409).length, 80 - MAX_ENDPOINTS_PER_OWNER, JSON.stringify(statuses));
      assert.ok(raced.filter((r) => r.status === 409).every((r) => problemType(r) === 'limit-reached'));
      assert.equal(
        (await call(server.url, 'GET', '/api/webhooks', { token: busy })).json.Items.length,
        MAX_ENDPOINTS_PER_OWNER,
      );
      const created = raced.filter((r) => r.status === 201);
      const refused = await register(body, busy);
      assert.equal(refused.status, 409, refused.text);
      assert.equal(problemType(refused), 'limit-reached');
      expectStatus(await register(body), 201, 'the limit is per client');
      expectStatus(await call(server.url, 'DELETE', `/api/webhooks/${created[0]!.json.Id}`, { token: busy }), 204);
      expectStatus(await register(body, busy), 201, 'deleting one makes room');
    });
  });
}
