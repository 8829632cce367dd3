// Per-caller rate limits: a budget per token caller (else per client address), 429 problem+json with
// Retry-After, the current draft-ietf-httpapi-ratelimit-headers fields, health probes exempt, and
// counters shared between instances through Redis.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, createServer as createNetServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { listenOnLoopback } from '../helpers/deadline.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';

const PROBLEM_JSON = 'application/problem+json; charset=utf-8';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const WINDOW = 60;

/** Reads `"default";r=<remaining>;t=<reset>` and checks `RateLimit-Policy: "default";q=<max>;w=<window>`. */
function rateLimitOf(res: CallResult, max: number): { remaining: number; reset: number } {
  assert.equal(res.headers.get('ratelimit-policy'), `"default";q=${max};w=${WINDOW}`);
  const match = /^"default";r=(\d+);t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '');
  assert.ok(match, `RateLimit: ${res.headers.get('ratelimit')}`);
  const reset = Number(match[2]);
  assert.ok(reset >= 0 && reset <= WINDOW, `t=${reset}`);
  for (const old of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-ratelimit-limit'])
    assert.equal(res.headers.get(old), null, `no ${old}`);
  return { remaining: Number(match[1]), reset };
}

function assertRateLimited(res: CallResult, max: number, what: string): void {
  expectProblem(res, 429, 'rate-limited', what);
  assert.equal(res.headers.get('content-type'), PROBLEM_JSON);
  assert.equal(res.json.status, 429);
  for (const member of ['title', 'detail', 'instance', 'requestId'])
    assert.equal(typeof res.json[member], 'string', member);
  const retryAfter = res.headers.get('retry-after') ?? '';
  assert.match(retryAfter, /^\d+$/, `Retry-After: ${retryAfter}`);
  assert.ok(Number(retryAfter) > 0 && Number(retryAfter) <= WINDOW, `Retry-After: ${retryAfter}`);
  assert.equal(rateLimitOf(res, max).remaining, 0);
}

for (const dialect of testDialects()) {
  describe(`rate limits in memory [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect, { RATE_LIMIT_MAX: '3' });
    });
    after(() => server.close());

    test('the 4th request of a caller is 429 problem+json with Retry-After and RateLimit headers', async () => {
      const token = await server.issuer.clientToken('orders:read', `first-${randomUUID()}`);
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await call(server.url, 'GET', '/api/orders', { token });
        assert.equal(res.status, 200, res.text);
        remaining.push(rateLimitOf(res, 3).remaining);
      }
      assert.deepEqual(remaining, [2, 1, 0]);
      assertRateLimited(await call(server.url, 'GET', '/api/orders', { token }), 3, '4th request');
      assertRateLimited(await call(server.url, 'POST', '/api/orders', { token, body: {} }), 3, 'any route');
    });

    test('two client tokens have separate budgets', async () => {
      const oneId = `one-${randomUUID()}`;
      const one = await server.issuer.clientToken('orders:read', oneId);
      const two = await server.issuer.clientToken('orders:read', `two-${randomUUID()}`);
      for (let i = 0; i < 3; i++) expectStatus(await call(server.url, 'GET', '/api/orders', { token: one }), 200);
      assertRateLimited(await call(server.url, 'GET', '/api/orders', { token: one }), 3, 'one exhausted');
      const other = await call(server.url, 'GET', '/api/orders', { token: two });
      expectStatus(other, 200, 'the second caller is unaffected');
      assert.equal(rateLimitOf(other, 3).remaining, 2);
      const sameClientNewToken = await server.issuer.clientToken('orders:read orders:write', oneId);
      assertRateLimited(
        await call(server.url, 'GET', '/api/orders', { token: sameClientNewToken }),
        3,
        'a fresh token of the same client shares its budget',
      );
    });

    test('health probes are never rate limited', async () => {
      for (let i = 0; i < 8; i++) {
        for (const path of ['/healthz', '/readyz', '/healthz?probe=lb']) {
          const res = await call(server.url, 'GET', path);
          assert.equal(res.status, 200, `${path} #${i}: ${res.text}`);
          assert.equal(res.headers.get('ratelimit'), null, path);
        }
      }
    });
  });

  describe(`rate limits for unauthenticated callers [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect, { RATE_LIMIT_MAX: '3' });
    });
    after(() => server.close());

    test('requests without a valid token are counted per client address', async () => {
      const statuses: number[] = [];
      for (const token of [undefined, 'not.a.jwt', undefined])
        statuses.push((await call(server.url, 'GET', '/api/orders', { token })).status);
      assert.deepEqual(statuses, [401, 401, 401]);
      assertRateLimited(await call(server.url, 'GET', '/api/orders'), 3, 'anonymous 4th');
      assertRateLimited(
        await call(server.url, 'GET', '/api/orders', { token: 'another.bad.token' }),
        3,
        'an invalid token counts as the address',
      );
      const authenticated = await server.issuer.clientToken('orders:read', `auth-${randomUUID()}`);
      expectStatus(
        await call(server.url, 'GET', '/api/orders', { token: authenticated }),
        200,
        'a verified caller has its own budget',
      );
    });
  });

  describe(`rate limits shared through Redis [${dialect}]`, () => {
    // Two instances of one deployment: one database, one Redis, one token issuer.
    let database: TestDatabase;
    let first: TestServer;
    let second: TestServer;
    before(async () => {
      database = await createTestDatabase(dialect);
      first = await startServer(dialect, { RATE_LIMIT_MAX: '3', REDIS_URL, DATABASE_URL: database.url });
      second = await startServer(dialect, { RATE_LIMIT_MAX: '3', REDIS_URL, DATABASE_URL: database.url }, first.issuer);
    });
    after(async () => {
      await first.close();
      await second.close();
      await database.drop();
    });

    test("two instances count one caller's requests together", async () => {
      const clientId = `redis-${dialect}-${randomUUID()}`;
      const token = await first.issuer.clientToken('orders:read', clientId);
      const seen: number[] = [];
      for (const server of [first, second, first]) {
        const res = await call(server.url, 'GET', '/api/orders', { token });
        assert.equal(res.status, 200, res.text);
        seen.push(rateLimitOf(res, 3).remaining);
      }
      assert.deepEqual(seen, [2, 1, 0], 'each instance sees the shared count');
      assertRateLimited(await call(second.url, 'GET', '/api/orders', { token }), 3, 'second instance');
      assertRateLimited(await call(first.url, 'GET', '/api/orders', { token }), 3, 'first instance');
      const other = await first.issuer.clientToken('orders:read', `redis-other-${randomUUID()}`);
      expectStatus(await call(second.url, 'GET', '/api/orders', { token: other }), 200);
    });
  });

  describe(`rate limits with a Redis slow to connect [${dialect}]`, () => {
    test('an instance counts from its very first request: it waits for Redis before serving', async () => {
      // A relay that holds each connection for 300 ms before reaching Redis, like a Redis across a network.
      const target = new URL(REDIS_URL);
      const relay = createNetServer((client) => {
        client.pause();
        setTimeout(() => {
          const upstream = connect(Number(target.port || 6379), target.hostname, () => {
            client.pipe(upstream).pipe(client);
            client.resume();
          });
          upstream.on('error', () => client.destroy());
          client.on('error', () => upstream.destroy());
          client.on('close', () => upstream.destroy());
        }, 300);
      });
      const relayPort = await listenOnLoopback(relay);
      const server = await startServer(dialect, {
        RATE_LIMIT_MAX: '3',
        REDIS_URL: `redis://127.0.0.1:${relayPort}`,
      });
      try {
        const token = await server.issuer.clientToken('orders:read', `slow-${randomUUID()}`);
        const res = await call(server.url, 'GET', '/api/orders', { token });
        assert.equal(res.status, 200, res.text);
        assert.equal(rateLimitOf(res, 3).remaining, 2, 'the first request is counted');
      } finally {
        await server.close();
        relay.close();
        relay.unref();
      }
    });
  });

  describe(`rate limits with Redis unreachable [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect, { RATE_LIMIT_MAX: '3', REDIS_URL: 'redis://127.0.0.1:1' });
    });
    after(() => server.close());

    test('a Redis outage falls back to a per-instance limit in memory, and the headers show it', async () => {
      const token = await server.issuer.clientToken('orders:read', `down-${randomUUID()}`);
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await call(server.url, 'GET', '/api/orders', { token });
        assert.equal(res.status, 200, res.text);
        remaining.push(rateLimitOf(res, 3).remaining);
      }
      assert.deepEqual(remaining, [2, 1, 0], 'counted, not a full quota on every answer');
      assertRateLimited(await call(server.url, 'GET', '/api/orders', { token }), 3, 'limit enforced without Redis');
      const ready = await call(server.url, 'GET', '/readyz');
      assert.equal(ready.status, 200, ready.text);
      assert.equal(ready.json.checks.redis, 'degraded', ready.text);
    });
  });
}
