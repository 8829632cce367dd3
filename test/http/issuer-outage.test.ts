// A down external issuer cannot turn traffic into an outbound flood: the API trusting another issuer
// (AUTH_SERVER_ENABLED=false, keys found by discovery) makes one fetch at a time, backs off after a
// failure (requests meanwhile get 503 issuer-unavailable with Retry-After, at once), counts a request
// against the rate limit before it can cause any fetch, and recovers when the issuer is back. The issuer
// is a real HTTP server on 127.0.0.1 that counts the requests it receives.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { FakeIssuer } from '../helpers/fake-issuer.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createTestIssuer, type TestIssuer } from '../helpers/tokens.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { waitUntil } from '../helpers/deadline.ts';

/** Far below the old behaviour of 2 fetches per request; covers a retry or two after the 1 s backoff. */
const MAX_FETCHES = 5;

async function startAgainst(
  issuer: FakeIssuer,
  tokens: TestIssuer,
  env: Record<string, string> = {},
): Promise<TestServer> {
  return startServer(
    'sqlite',
    { AUTH_SERVER_ENABLED: 'false', AUTH_ISSUER: issuer.url, AUTH_JWKS_FILE: '', ...env },
    tokens,
  );
}

function tokenFor(tokens: TestIssuer, issuer: FakeIssuer): Promise<string> {
  const client = `client-${randomUUID()}`;
  return tokens.token({ iss: issuer.url, sub: client, client_id: client, scope: 'orders:read' });
}

/** `total` requests, `concurrency` at a time, each with a fresh token (so no verification is cached). */
async function burst(total: number, concurrency: number, send: () => Promise<CallResult>): Promise<CallResult[]> {
  const results: CallResult[] = [];
  let started = 0;
  const worker = async (): Promise<void> => {
    while (started < total) {
      started++;
      results.push(await send());
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

function assertIssuerUnavailable(res: CallResult, what: string): void {
  expectProblem(res, 503, 'issuer-unavailable', what);
  assert.match(
    res.headers.get('retry-after') ?? '',
    /^[1-9]\d*$/,
    `${what}: Retry-After ${res.headers.get('retry-after')}`,
  );
}

describe('an external issuer that answers 503', () => {
  let tokens: TestIssuer;
  let issuer: FakeIssuer;
  let server: TestServer;
  before(async () => {
    tokens = await createTestIssuer();
    issuer = await FakeIssuer.start([tokens.publicJwk]);
    issuer.mode = 'down';
    server = await startAgainst(issuer, tokens);
  });
  after(async () => {
    await server.close();
    await issuer.close();
  });

  test('200 requests cause a handful of fetches, not 2 each, each gets 503 issuer-unavailable with Retry-After, and tokens verify again once it is back', async () => {
    const results = await burst(200, 20, async () =>
      call(server.url, 'GET', '/api/orders', {
        token: await tokenFor(tokens, issuer),
        signal: AbortSignal.timeout(10_000),
      }),
    );
    for (const [i, res] of results.entries()) assertIssuerUnavailable(res, `request ${i}`);
    assert.ok(issuer.fetches <= MAX_FETCHES, `for 200 requests, ${issuer.summary()}`);

    issuer.mode = 'up';
    const token = await tokenFor(tokens, issuer);
    let last: CallResult | undefined;
    await waitUntil(
      async () => {
        last = await call(server.url, 'GET', '/api/orders', { token, signal: AbortSignal.timeout(10_000) });
        if (last.status === 200) return true;
        assertIssuerUnavailable(last, 'while recovering');
        return false;
      },
      40_000, // the backoff is at most 30 s
      () => `not recovered: ${last?.status} ${last?.text}`,
      100,
    );
    const fetchesAfter = issuer.fetches;
    for (let i = 0; i < 20; i++)
      expectStatus(await call(server.url, 'GET', '/api/orders', { token: await tokenFor(tokens, issuer) }), 200);
    assert.equal(issuer.fetches, fetchesAfter, `keys are not fetched again for every token: ${issuer.summary()}`);
  });
});

describe('an external issuer that accepts connections and never answers', () => {
  let tokens: TestIssuer;
  let issuer: FakeIssuer;
  let server: TestServer;
  before(async () => {
    tokens = await createTestIssuer();
    issuer = await FakeIssuer.start([tokens.publicJwk]);
    issuer.mode = 'hang';
    server = await startAgainst(issuer, tokens);
  });
  after(async () => {
    await server.close();
    await issuer.close();
  });

  test('concurrent requests share one fetch until its timeout, and later ones fail at once without waiting on the issuer', async () => {
    // The first requests wait for the one fetch in flight (5 s timeout); nothing else is sent meanwhile.
    const first = await burst(20, 20, async () =>
      call(server.url, 'GET', '/api/orders', {
        token: await tokenFor(tokens, issuer),
        signal: AbortSignal.timeout(15_000),
      }),
    );
    for (const [i, res] of first.entries()) assertIssuerUnavailable(res, `first wave ${i}`);
    assert.equal(issuer.fetches, 1, `one fetch shared by 20 requests: ${issuer.summary()}`);
    // From now on the issuer is known to be failing: no request waits on a retry.
    const later = await burst(60, 10, async () =>
      call(server.url, 'GET', '/api/orders', {
        token: await tokenFor(tokens, issuer),
        signal: AbortSignal.timeout(1000),
      }),
    );
    for (const [i, res] of later.entries()) assertIssuerUnavailable(res, `later ${i}`);
    assert.ok(issuer.fetches <= 3, `for 80 requests, ${issuer.summary()}`);
  });
});

describe('the rate limit comes before any fetch of the issuer keys', () => {
  let tokens: TestIssuer;
  let issuer: FakeIssuer;
  let server: TestServer;
  before(async () => {
    tokens = await createTestIssuer();
    issuer = await FakeIssuer.start([tokens.publicJwk]);
    server = await startAgainst(issuer, tokens, { RATE_LIMIT_MAX: '2' });
  });
  after(async () => {
    await server.close();
    await issuer.close();
  });

  test('a request over the limit of its address gets 429 without any fetch, even with a token whose keys are not loaded yet', async () => {
    for (let i = 0; i < 2; i++) expectStatus(await call(server.url, 'GET', '/api/orders', { token: 'not.a.jwt' }), 401);
    const res = await call(server.url, 'GET', '/api/orders', { token: await tokenFor(tokens, issuer) });
    assert.equal(res.status, 429, `counted by address before its keys are fetched: ${res.status} ${res.text}`);
    assert.equal(issuer.fetches, 0, `no fetch for a request refused by the rate limit: ${issuer.summary()}`);
  });
});
