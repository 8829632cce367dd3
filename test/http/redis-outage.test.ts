// A Redis that stops answering (a stall: bytes stop, sockets stay open) or goes away (connections reset,
// new ones refused) never freezes the API: within REDIS_TIMEOUT rate limits fall back to per-instance
// counters in memory, the RateLimit headers report that counter, /readyz stays 200 and names Redis as
// degraded, and once Redis answers again counting is shared between instances again. Real Redis, behind
// a TCP proxy the test controls; two instances of one deployment, one of them reaching Redis directly.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { waitUntil } from '../helpers/deadline.ts';

// A database number of its own, so these counters never meet those of other suites.
const REDIS_URL = `${(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379').replace(/\/\d*$/, '')}/9`;
const MAX = 3;
const REDIS_TIMEOUT = '300ms';
/** Every request during an outage must be answered within this (REDIS_TIMEOUT plus ample slack). */
const ANSWER_WITHIN_MS = 3000;
const RECOVERY_DEADLINE_MS = 20_000;

function rateLimit(res: CallResult): { remaining: number } {
  assert.equal(res.headers.get('ratelimit-policy'), `"default";q=${MAX};w=60`, res.text);
  const match = /^"default";r=(\d+);t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '');
  assert.ok(match, `RateLimit: ${res.headers.get('ratelimit')} (${res.status} ${res.text})`);
  return { remaining: Number(match[1]) };
}

function get(server: TestServer, path: string, token?: string): Promise<CallResult> {
  return call(server.url, 'GET', path, { token, signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
}

/** Requests of one new caller on the proxied instance while Redis is unavailable: the per-instance limit. */
async function assertInMemoryLimit(server: TestServer, what: string): Promise<void> {
  const token = await server.issuer.clientToken('orders:read', `outage-${randomUUID()}`);
  const seen: string[] = [];
  for (let i = 0; i <= MAX; i++) {
    const res = await get(server, '/api/orders', token);
    seen.push(`${res.status} r=${rateLimit(res).remaining}`);
  }
  assert.deepEqual(
    seen,
    ['200 r=2', '200 r=1', '200 r=0', '429 r=0'],
    `${what}: the limit is enforced in memory and the headers say so`,
  );
  const ready = await get(server, '/readyz');
  assert.equal(ready.status, 200, `${what}: /readyz ${ready.text}`);
  assert.equal(ready.json.checks.redis, 'degraded', `${what}: /readyz ${ready.text}`);
}

/**
 * Polls until the two instances count one caller together again: a new caller's first request on the
 * proxied instance, then one on the direct instance, which sees r=1 only if the first reached Redis.
 */
async function waitForSharedCounting(proxied: TestServer, direct: TestServer): Promise<void> {
  let last = '';
  let token = '';
  await waitUntil(
    async () => {
      token = await proxied.issuer.clientToken('orders:read', `recovery-${randomUUID()}`);
      const first = await get(proxied, '/api/orders', token);
      const second = await get(direct, '/api/orders', token);
      last = `proxied ${first.status} ${first.headers.get('ratelimit')}, direct ${second.status} ${second.headers.get('ratelimit')}`;
      return first.status === 200 && second.status === 200 && rateLimit(second).remaining === 1;
    },
    RECOVERY_DEADLINE_MS,
    () => `counting was not shared again; last: ${last}`,
    100,
  );
  const third = await get(proxied, '/api/orders', token);
  assert.equal(rateLimit(third).remaining, 0, `the proxied instance counts in Redis again: ${third.text}`);
  const ready = await get(proxied, '/readyz');
  assert.equal(ready.json.checks.redis, 'ok', `/readyz after recovery: ${ready.text}`);
}

describe('rate limits while Redis is unavailable', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let proxied: TestServer;
  let direct: TestServer;
  before(async () => {
    proxy = TcpProxy.for(REDIS_URL, 6379);
    await proxy.start();
    database = await createTestDatabase('sqlite');
    const env = { RATE_LIMIT_MAX: String(MAX), REDIS_TIMEOUT, DATABASE_URL: database.url };
    proxied = await startServer('sqlite', { ...env, REDIS_URL: proxy.rewrite(REDIS_URL) });
    direct = await startServer('sqlite', { ...env, REDIS_URL }, proxied.issuer);
  });
  after(async () => {
    await proxied.close();
    await direct.close();
    await proxy.close();
    await database.drop();
  });

  test('a stalled Redis: requests answer promptly, limited per instance in memory, and shared counting resumes', async () => {
    const ready = await get(proxied, '/readyz');
    assert.equal(ready.json.checks.redis, 'ok', `before the stall: ${ready.text}`);
    const token = await proxied.issuer.clientToken('orders:read', `before-${randomUUID()}`);
    assert.equal(rateLimit(await get(proxied, '/api/orders', token)).remaining, 2, 'counted in Redis');
    assert.equal(rateLimit(await get(direct, '/api/orders', token)).remaining, 1, 'shared with the other instance');

    proxy.stall();
    await assertInMemoryLimit(proxied, 'stall');
    proxy.resume();
    await waitForSharedCounting(proxied, direct);
  });

  test('a Redis whose connections are reset and then refused: the same, and shared counting resumes when it is back', async () => {
    proxy.reset();
    await proxy.cut();
    await assertInMemoryLimit(proxied, 'reset and refused');
    await proxy.start();
    await waitForSharedCounting(proxied, direct);
  });
});
