// Fetching the issuer's keys over HTTP, with an injected clock: a token with an unknown `kid` refetches
// the key set at most once per cooldown (30 s), a failed fetch starts a backoff during which nothing is
// fetched and requests get 503 at once, and keys past their max age (10 min) keep verifying while the
// issuer is down. The issuer is a real HTTP server on 127.0.0.1 that counts the requests it receives.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTokenVerifier, type TokenVerifier } from '../../src/http/bearer/token-verifier.ts';
import { Problem } from '../../src/http/problems/problems.ts';
import { waitUntil, withDeadline } from '../helpers/deadline.ts';
import { FakeIssuer } from '../helpers/fake-issuer.ts';
import { createTestIssuer, TEST_RESOURCE, type TestIssuer } from '../helpers/tokens.ts';

const SECOND = 1000;

/** What verify() settled to, as a short string: `ok`, or the problem's status and type name. */
async function outcome(verifier: TokenVerifier, token: string, issuer: FakeIssuer): Promise<string> {
  try {
    // A verify() waiting on a stuck key fetch fails here, as "not a problem: DeadlineError …".
    await withDeadline(verifier.verify(token), 20_000, () => `verify() (issuer: ${issuer.summary()})`);
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof Problem, `not a problem: ${String(err)}`);
    return `${err.status} ${err.type.slug}`;
  }
}

async function outcomes(verifier: TokenVerifier, tokens: string[], issuer: FakeIssuer): Promise<string[]> {
  return [...new Set(await Promise.all(tokens.map((token) => outcome(verifier, token, issuer))))];
}

/** Waits (with a deadline) until the issuer has seen `count` requests: a fetch started in the background. */
async function fetchesReach(issuer: FakeIssuer, count: number): Promise<void> {
  await waitUntil(
    () => issuer.fetches >= count,
    5000,
    () => issuer.summary(),
    10,
  );
  assert.equal(issuer.fetches, count, issuer.summary());
}

describe('issuer keys fetched over HTTP', () => {
  let tokens: TestIssuer;
  let issuer: FakeIssuer;
  let clock: number;
  let verifier: TokenVerifier;
  const known = () => tokens.token({ iss: issuer.url, sub: 'c1', client_id: 'c1', scope: 'orders:read' });
  const unknownKids = (n: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) => tokens.token({ iss: issuer.url, sub: 'c1' }, { kid: `rotated-${i}` })),
    );

  before(async () => {
    tokens = await createTestIssuer();
    issuer = await FakeIssuer.start([tokens.publicJwk]);
  });
  after(() => issuer.close());
  beforeEach(() => {
    issuer.mode = 'up';
    issuer.requests.length = 0;
    clock = Date.now();
    verifier = createTokenVerifier({
      issuer: issuer.url,
      audience: TEST_RESOURCE,
      algorithms: ['ES256'],
      clockToleranceSeconds: 5,
      cacheSize: 0,
      jwksFile: undefined,
      jwksUrl: issuer.jwksUrl,
      remoteKeys: { now: () => clock },
    });
  });

  test('a token with an unknown kid refetches the key set at most once per cooldown', async () => {
    assert.equal(await outcome(verifier, await known(), issuer), 'ok');
    assert.equal(issuer.fetches, 1);
    clock += 1 * SECOND;
    assert.deepEqual(
      await outcomes(verifier, await unknownKids(10), issuer),
      ['401 invalid-token'],
      'checked a second ago: no match',
    );
    assert.equal(issuer.fetches, 1, 'no refetch within the cooldown');
    clock += 30 * SECOND;
    assert.deepEqual(await outcomes(verifier, await unknownKids(10), issuer), ['401 invalid-token']);
    assert.equal(
      issuer.fetches,
      2,
      `one refetch for 10 concurrent tokens once the cooldown passed: ${issuer.summary()}`,
    );
    clock += 1 * SECOND;
    assert.deepEqual(await outcomes(verifier, await unknownKids(10), issuer), ['401 invalid-token']);
    assert.equal(issuer.fetches, 2, 'and then none within the new cooldown');
  });

  test('while the issuer fails, fetches back off, requests get 503 at once, and the keys held keep verifying', async () => {
    assert.equal(await outcome(verifier, await known(), issuer), 'ok');
    issuer.mode = 'down';
    clock += 31 * SECOND;
    assert.deepEqual(
      await outcomes(verifier, await unknownKids(10), issuer),
      ['503 issuer-unavailable'],
      'the refetch failed',
    );
    assert.equal(issuer.fetches, 2, 'one refetch for 10 concurrent tokens');
    assert.equal(await outcome(verifier, await known(), issuer), 'ok', 'a known key still verifies, without a fetch');
    clock += 2 * SECOND;
    assert.deepEqual(
      await outcomes(verifier, await unknownKids(10), issuer),
      ['503 issuer-unavailable'],
      'within the cooldown, with the issuer failing',
    );
    assert.equal(issuer.fetches, 2, 'no fetch within the cooldown');
    clock += 30 * SECOND;
    assert.deepEqual(
      await outcomes(verifier, await unknownKids(10), issuer),
      ['503 issuer-unavailable'],
      'a retry runs in the background; nobody waits for it',
    );
    await fetchesReach(issuer, 3);
    clock += 11 * 60 * SECOND;
    // The failed retry may still be settling: a held key's verification starts the refresh once none is in
    // flight and its backoff has passed. A failure that settles after the jump above starts its backoff
    // (4 s after the third failure) from the new time, so the clock keeps moving while the test waits.
    await waitUntil(
      async () => {
        if (issuer.fetches >= 4) return true;
        assert.equal(
          await outcome(verifier, await known(), issuer),
          'ok',
          'keys past their max age keep verifying while a refresh fails',
        );
        clock += SECOND;
        return false;
      },
      5000,
      () => issuer.summary(),
      10,
    );
    await fetchesReach(issuer, 4);
    for (let i = 0; i < 10; i++) assert.equal(await outcome(verifier, await known(), issuer), 'ok');
    assert.equal(issuer.fetches, 4, 'no refresh during the backoff');
  });
});
