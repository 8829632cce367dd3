// docs/reference/metrics.md: each metric family moves when its event happens, over real HTTP on every dialect,
// read from the metrics listener (where /metrics is served and who may read it: exposure.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { pkcePair, runAuthorizationFlow, FlowError } from '../helpers/oauth-flow.ts';
import { tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';
import { sample, scrape } from '../helpers/prometheus.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { LOCAL_WEBHOOKS_ENV, startReceiver, WEBHOOK_SCOPES, type TestReceiver } from '../helpers/webhook-receiver.ts';

const HTTP = 'signet_http_request_duration_seconds_count';

for (const dialect of testDialects()) {
  describe(`metrics (${dialect})`, () => {
    let server: AuthTestServer;
    let receiver: TestReceiver;
    let token: string;
    let client: { clientId: string; clientSecret: string | undefined; redirectUri: string };

    before(async () => {
      receiver = await startReceiver();
      server = await startAuthServer(dialect, LOCAL_WEBHOOKS_ENV);
      client = await server.createClient({ scopes: ['openid', ...WEBHOOK_SCOPES.split(' ')] });
      token = await clientCredentials();
    });
    after(async () => {
      await server?.close();
      await receiver?.close();
    });

    async function clientCredentials(): Promise<string> {
      const result = await tokenRequest(server, {
        grant_type: 'client_credentials',
        scope: WEBHOOK_SCOPES,
        client_id: client.clientId,
        client_secret: client.clientSecret!,
      });
      return tokenFrom(result, 'access_token', 'client credentials');
    }

    test('counts tokens issued by grant type', async () => {
      const before = sample(await scrape(server.metricsUrl), 'signet_oauth_tokens_issued_total', {
        grant_type: 'client_credentials',
      });
      await clientCredentials();
      const text = await scrape(server.metricsUrl);
      assert.equal(sample(text, 'signet_oauth_tokens_issued_total', { grant_type: 'client_credentials' }), before + 1);
    });

    test('observes request durations by route template, method and status class, never by URL', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 10 },
      });
      assert.equal(created.status, 201, created.text);
      const read = await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token });
      assert.equal(read.status, 200, read.text);
      const missing = await call(server.url, 'GET', '/no/such/path');
      assert.equal(missing.status, 404, missing.text);
      const text = await scrape(server.metricsUrl);
      const labels = (route: string, method: string, statusClass: string) => ({
        route,
        method,
        status_class: statusClass,
      });
      assert.ok(sample(text, HTTP, labels('/api/orders', 'POST', '2xx')) >= 1, text);
      assert.ok(sample(text, HTTP, labels('/api/orders/:id', 'GET', '2xx')) >= 1, text);
      assert.ok(sample(text, HTTP, labels('unmatched', 'GET', '4xx')) >= 1, text);
      assert.ok(!text.includes(`/api/orders/${created.json.Id}`), 'an order URL appeared in a label');
      assert.ok(!text.includes(client.clientId), 'a client id appeared in a label');
    });

    test('counts sign-ins by outcome', async () => {
      const user = await server.createUser();
      const browser = await server.createClient({ scopes: ['openid'] });
      const { challenge } = pkcePair();
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: browser.clientId,
        redirect_uri: browser.redirectUri,
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }).toString();
      await assert.rejects(
        runAuthorizationFlow({
          base: server.url,
          authorizeQuery: query,
          email: user.email,
          password: 'wrong password',
        }),
        (err: unknown) => err instanceof FlowError && err.message.includes('401'),
      );
      const text = await scrape(server.metricsUrl);
      assert.equal(sample(text, 'signet_sign_ins_total', { outcome: 'failure' }), 1, text);
      assert.equal(sample(text, 'signet_sign_ins_total', { outcome: 'success' }), 0, text);
    });

    test('counts idempotent replays and key conflicts', async () => {
      const headers = { 'idempotency-key': `metrics-${dialect}` };
      const first = await call(server.url, 'POST', '/api/orders', {
        token,
        headers,
        body: { CustomerId: CUSTOMER, Total: 12 },
      });
      assert.equal(first.status, 201, first.text);
      const replay = await call(server.url, 'POST', '/api/orders', {
        token,
        headers,
        body: { CustomerId: CUSTOMER, Total: 12 },
      });
      assert.equal(replay.headers.get('idempotent-replayed'), 'true', replay.text);
      const reused = await call(server.url, 'POST', '/api/orders', {
        token,
        headers,
        body: { CustomerId: CUSTOMER, Total: 13 },
      });
      assert.ok(reused.status >= 400 && reused.status < 500, reused.text);
      const text = await scrape(server.metricsUrl);
      assert.equal(sample(text, 'signet_idempotency_replays_total'), 1, text);
      assert.equal(sample(text, 'signet_idempotency_conflicts_total', { reason: 'key_reused' }), 1, text);
    });

    test('counts webhook attempts and reports the pending, due and in-flight backlog from the database', async () => {
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      receiver.answer = async () => {
        await gate;
        return { status: 200 };
      };
      const endpoint = await call(server.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: `${receiver.url}/hook`, Events: ['*'] },
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 11 },
      });
      assert.equal(created.status, 201, created.text);
      let text = '';
      try {
        // The receiver holds the attempt: the delivery is pending, due and leased.
        await waitUntil(
          async () => {
            text = await scrape(server.metricsUrl);
            return (
              sample(text, 'signet_webhook_deliveries_in_flight') === 1 &&
              sample(text, 'signet_webhook_oldest_due_delivery_age_seconds') > 0
            );
          },
          15_000,
          () => `the in-flight delivery never showed:\n${text}`,
        );
        assert.equal(sample(text, 'signet_webhook_deliveries_pending'), 1, text);
      } finally {
        release();
      }
      await waitUntil(
        async () => {
          text = await scrape(server.metricsUrl);
          return (
            sample(text, 'signet_webhook_attempts_total', { outcome: 'succeeded', error_kind: 'none' }) === 1 &&
            sample(text, 'signet_webhook_deliveries_pending') === 0
          );
        },
        15_000,
        () => `the attempt was never counted, or the delivery stayed pending:\n${text}`,
      );
      assert.equal(sample(text, 'signet_webhook_attempt_duration_seconds_count', { outcome: 'succeeded' }), 1, text);
      assert.equal(sample(text, 'signet_webhook_deliveries_in_flight'), 0, text);
      assert.equal(sample(text, 'signet_webhook_oldest_due_delivery_age_seconds'), 0, text);
    });

    test('exports the default Node process metrics', async () => {
      const text = await scrape(server.metricsUrl);
      assert.ok(sample(text, 'process_cpu_seconds_total') > 0, text);
      assert.match(text, /^nodejs_eventloop_lag_seconds /m);
    });

    // Last: it breaks a table of this suite's database.
    test('counts requests that failed in the database', async () => {
      await sql`drop table idempotency_keys`.execute(server.app.database.db);
      const failed = await call(server.url, 'POST', '/api/orders', {
        token,
        headers: { 'idempotency-key': 'after-the-drop' },
        body: { CustomerId: CUSTOMER, Total: 14 },
      });
      assert.equal(failed.status, 500, failed.text);
      const text = await scrape(server.metricsUrl);
      assert.equal(sample(text, 'signet_database_errors_total', { kind: 'other' }), 1, text);
      assert.equal(sample(text, 'signet_database_errors_total', { kind: 'outage' }), 0, text);
    });
  });

  describe(`metrics and the rate limit (${dialect})`, () => {
    let server: TestServer;
    let token: string;
    // On the API port, where the rate limit applies to everything else.
    const metricsToken = 'metrics-token-0123456789-abcdefghijklmnop';
    before(async () => {
      server = await startServer(dialect, { RATE_LIMIT_MAX: '2', METRICS_PORT: 'main', METRICS_TOKEN: metricsToken });
      token = await server.issuer.clientToken('orders:read');
    });
    after(() => server?.close());

    test('counts 429 refusals, and /metrics itself is never limited', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await call(server.url, 'GET', '/api/orders', { token })).status);
      assert.deepEqual(statuses, [200, 200, 429]);
      let text = '';
      for (let i = 0; i < 4; i++) text = await scrape(server.url, metricsToken); // scrape() fails on anything but 200
      assert.equal(sample(text, 'signet_rate_limit_refusals_total'), 1, text);
      assert.ok(sample(text, HTTP, { route: '/api/orders', method: 'GET', status_class: '4xx' }) >= 1, text);
    });
  });
}
