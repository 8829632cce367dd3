// The authorization server's endpoint limits (docs/security.md, "Rate limits"; OAUTH_RATE_LIMIT_*): guessing
// a client secret at /oauth/token, /oauth/introspect, or a registration token at /oauth/reg stops after a
// few failures per address and per client with 429 and Retry-After (RFC 6585 §4), in the endpoint's OAuth
// error shape; successes count against a much higher limit. Requests come from several loopback
// addresses (127.0.0.x) so the per-address and per-client counters can be told apart.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { freePort, startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { CALL_TIMEOUT_MS } from '../helpers/http.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown>;
}

/** A POST from the loopback address `from` (Linux routes all of 127.0.0.0/8 to lo). */
function post(url: string, from: string, headers: Record<string, string>, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        localAddress: from,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // not JSON: `text` shows it in the assertion
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const FORM = 'application/x-www-form-urlencoded';
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

function clientCredentials(server: AuthTestServer, from: string, id: string, secret: string): Promise<Answer> {
  return post(
    `${server.issuer}/token`,
    from,
    { 'content-type': FORM, authorization: basic(id, secret) },
    'grant_type=client_credentials',
  );
}

/** A 429 as the endpoints answer it: Retry-After in whole seconds within the window, the OAuth error shape. */
function assertLimited(answer: Answer, what: string): void {
  assert.equal(answer.status, 429, `${what}: ${answer.text}`);
  const retryAfter = Number(answer.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${what}: Retry-After ${retryAfter}`);
  assert.match(String(answer.headers['content-type']), /^application\/json/, what);
  assert.equal(answer.json.error, 'temporarily_unavailable', answer.text);
  assert.match(String(answer.json.error_description), /retry in \d+ s/, answer.text);
}

describe('endpoint limits with the default settings', () => {
  let server: AuthTestServer;
  let client: { clientId: string; clientSecret?: string };
  let other: { clientId: string; clientSecret?: string };
  before(async () => {
    // '' is "not set": the defaults (20 failures, 600 requests per minute) apply.
    server = await startAuthServer('sqlite', {
      OAUTH_RATE_LIMIT_FAILURES: '',
      OAUTH_RATE_LIMIT_MAX: '',
      DYNAMIC_REGISTRATION: 'true',
    });
    client = await server.createClient({ grantTypes: ['client_credentials'], scopes: ['orders:read'] });
    other = await server.createClient({ grantTypes: ['client_credentials'], scopes: ['orders:read'] });
  });
  after(() => server.close());

  test('300 wrong client secrets from one address: the first 20 get 401 invalid_client, the other 280 get 429', async (t) => {
    const answers: Answer[] = [];
    for (let i = 0; i < 300; i += 1)
      answers.push(await clientCredentials(server, '127.0.0.1', client.clientId, `guess-${i}`));
    const statuses = answers.map((a) => a.status);
    const unauthorized = statuses.filter((s) => s === 401).length;
    const limited = statuses.filter((s) => s === 429).length;
    t.diagnostic(`300 wrong secrets: ${unauthorized} × 401, ${limited} × 429`);
    assert.deepEqual([unauthorized, limited], [20, 280], JSON.stringify(statuses));
    for (const answer of answers.slice(0, 20)) assert.equal(answer.json.error, 'invalid_client', answer.text);
    assert.ok(
      statuses.slice(0, 20).every((s) => s === 401),
      'the failures come first',
    );
    for (const answer of answers.slice(20)) assertLimited(answer, 'past 20 failures');
  });

  test('the guessed client is limited from every address; another client from a fresh address is not', async () => {
    const elsewhere = await clientCredentials(server, '127.0.0.2', client.clientId, 'another guess');
    assertLimited(elsewhere, 'the same client from another address');
    // The trade-off of a per-client counter (docs/security.md, "Rate limits"): its right secret waits too.
    const right = await clientCredentials(server, '127.0.0.3', client.clientId, client.clientSecret!);
    assertLimited(right, 'the guessed client with its right secret');
    const fine = await clientCredentials(server, '127.0.0.3', other.clientId, other.clientSecret!);
    assert.equal(fine.status, 200, fine.text);
    const sameAddress = await clientCredentials(server, '127.0.0.1', other.clientId, other.clientSecret!);
    assertLimited(sameAddress, 'any client from the guessing address');
  });

  test('refusals other than a failed authentication limit the address, never the client', async () => {
    const app = await server.createClient();
    const statuses: number[] = [];
    for (let i = 0; i < 21; i += 1) {
      const answer = await post(
        `${server.issuer}/token`,
        '127.0.0.7',
        { 'content-type': FORM, authorization: basic(app.clientId, app.clientSecret!) },
        new URLSearchParams({
          grant_type: 'authorization_code',
          code: `expired-${i}`,
          code_verifier: 'x'.repeat(43),
          redirect_uri: app.redirectUri,
        }).toString(),
      );
      statuses.push(answer.status);
      if (i < 20) assert.equal(answer.json.error, 'invalid_grant', answer.text);
      else assertLimited(answer, 'the address, past 20 refusals');
    }
    const elsewhere = await clientCredentials(server, '127.0.0.8', app.clientId, app.clientSecret!);
    assert.equal(elsewhere.status, 200, `the client itself is not limited: ${elsewhere.text}`);
  });

  test('/oauth/introspect is limited the same way (client_secret_post names the client in the form)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i += 1) {
      const answer = await post(
        `${server.issuer}/introspect`,
        '127.0.0.4',
        { 'content-type': FORM },
        new URLSearchParams({ token: 'x', client_id: other.clientId, client_secret: `guess-${i}` }).toString(),
      );
      statuses.push(answer.status);
      if (i >= 20) assertLimited(answer, `introspection attempt ${i + 1}`);
    }
    assert.deepEqual(statuses.slice(0, 20), Array<number>(20).fill(401), JSON.stringify(statuses));
  });

  test('/oauth/reg: guessed registration tokens get 401 invalid_token, then 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i += 1) {
      const answer = await post(
        `${server.issuer}/reg`,
        '127.0.0.5',
        { 'content-type': 'application/json', authorization: `Bearer guess-${i}` },
        JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'] }),
      );
      statuses.push(answer.status);
      if (i < 20) assert.equal(answer.json.error, 'invalid_token', answer.text);
      else assertLimited(answer, `registration attempt ${i + 1}`);
    }
    assert.deepEqual(statuses.slice(0, 20), Array<number>(20).fill(401), JSON.stringify(statuses));
  });
});

describe('endpoint limits: successes count less than failures', () => {
  let server: AuthTestServer;
  before(async () => {
    server = await startAuthServer('sqlite', { OAUTH_RATE_LIMIT_FAILURES: '3', OAUTH_RATE_LIMIT_MAX: '30' });
  });
  after(() => server.close());

  test('30 good requests pass where 3 failures would stop; the 31st is 429', async () => {
    const client = await server.createClient({ grantTypes: ['client_credentials'], scopes: ['orders:read'] });
    for (let i = 0; i < 30; i += 1) {
      const answer = await clientCredentials(server, '127.0.0.6', client.clientId, client.clientSecret!);
      assert.equal(answer.status, 200, `request ${i + 1}: ${answer.text}`);
    }
    assertLimited(await clientCredentials(server, '127.0.0.6', client.clientId, client.clientSecret!), 'request 31');
  });
});

describe('endpoint limits shared by two instances through Redis', () => {
  const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  let first: AuthTestServer;
  let second: AuthTestServer;
  before(async () => {
    const env = { OAUTH_RATE_LIMIT_FAILURES: '5', REDIS_URL };
    first = await startAuthServer('sqlite', env);
    second = await startAuthServer('sqlite', env, { databaseUrl: first.databaseUrl, port: await freePort() });
  });
  after(async () => {
    await second.stop();
    await first.close();
  });

  test('failures at one instance count at the other', async () => {
    const client = await first.createClient({ grantTypes: ['client_credentials'], scopes: ['orders:read'] });
    // An address of this run alone: the Redis counters outlive the test.
    const from = `127.${1 + Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}.9`;
    for (let i = 0; i < 5; i += 1) {
      const server = i % 2 === 0 ? first : second;
      const answer = await clientCredentials(server, from, client.clientId, `guess-${i}`);
      assert.equal(answer.status, 401, `attempt ${i + 1}: ${answer.text}`);
    }
    assertLimited(
      await clientCredentials(second, from, client.clientId, 'guess-5'),
      'the sixth, at the second instance',
    );
    assertLimited(
      await clientCredentials(first, from, client.clientId, 'guess-6'),
      'the seventh, at the first instance',
    );
  });
});
