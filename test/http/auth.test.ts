// Bearer-token authentication and authorization of the order API: RFC 6750 challenges, the RFC 9068
// access-token profile, RFC 8725 hardening (alg allow-list, no key confusion), scopes, per-customer
// visibility for end-user tokens, and the verification cache never outliving a token.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { base64url, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { TEST_ISSUER, TEST_RESOURCE } from '../helpers/tokens.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { rawRequest, type RawResponse } from './raw-http.ts';

/** RFC 9728 §5.1: every Bearer challenge names the resource's metadata document. */
const METADATA = 'https://api.test/.well-known/oauth-protected-resource/api';

const PROBLEM_JSON = 'application/problem+json; charset=utf-8';
// RFC 6750 §3: error and error_description values use only these characters (no `"` or `\`).
const CHALLENGE_VALUE = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** The problem+json shape every refusal shares (any problem type). */
const PROBLEM = { exactMediaType: true, members: true, requestId: true, instance: true } as const;

/** Parses `Bearer k="v", k2="v2"` into its auth-params; fails when the header is not one well-formed challenge. */
function bearerChallenge(res: CallResult): Record<string, string> {
  const header = res.headers.get('www-authenticate') ?? '';
  const match = /^Bearer (.*)$/.exec(header);
  assert.ok(match, `WWW-Authenticate: ${header}`);
  const params: Record<string, string> = {};
  const rest = (match[1] ?? '').replace(/\s*([a-z_]+)="([^"\\]*)"\s*(,|$)/g, (_all, name: string, value: string) => {
    params[name] = value;
    return '';
  });
  assert.equal(rest, '', `unparseable challenge: ${header}`);
  for (const [name, value] of Object.entries(params)) assert.match(value, CHALLENGE_VALUE, `${name} in ${header}`);
  return params;
}

function assertInvalidToken(res: CallResult, what: string): void {
  assert.equal(res.status, 401, `${what}: ${res.text}`);
  expectProblem(res, 401, undefined, PROBLEM);
  const challenge = bearerChallenge(res);
  assert.equal(challenge.realm, 'signet', what);
  assert.equal(challenge.error, 'invalid_token', what);
}

const now = () => Math.floor(Date.now() / 1000);

function unsignedToken(header: object, payload: object): string {
  const encode = (value: object) => base64url.encode(JSON.stringify(value));
  return `${encode(header)}.${encode(payload)}.`;
}

for (const dialect of testDialects()) {
  describe(`bearer authentication [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect);
    });
    after(() => server.close());

    test('a request without a token is 401 with a bare Bearer challenge (no error attribute) and a problem body', async () => {
      const res = await call(server.url, 'GET', '/api/orders');
      expectProblem(res, 401, undefined, PROBLEM);
      assert.equal(res.headers.get('www-authenticate'), `Bearer realm="signet", resource_metadata="${METADATA}"`);
      const other = await call(server.url, 'GET', '/api/orders', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
      expectProblem(other, 401, undefined, PROBLEM);
      assert.equal(
        other.headers.get('www-authenticate'),
        `Bearer realm="signet", resource_metadata="${METADATA}"`,
        'another scheme is no Bearer credential at all',
      );
    });

    test('a malformed Bearer Authorization header is 400 invalid_request', async () => {
      for (const header of ['Bearer', 'Bearer ', 'Bearer a b', 'Bearer ab"c', 'Bearer ==abc']) {
        const res = await call(server.url, 'GET', '/api/orders', { headers: { authorization: header } });
        expectProblem(res, 400, undefined, PROBLEM);
        const challenge = bearerChallenge(res);
        assert.equal(challenge.realm, 'signet', header);
        assert.equal(challenge.error, 'invalid_request', header);
      }
    });

    test('a valid access token is accepted, with typ at+jwt or application/at+jwt', async () => {
      const token = await server.issuer.clientToken('orders:read');
      expectStatus(await call(server.url, 'GET', '/api/orders', { token }), 200);
      const longTyp = await server.issuer.token(
        { sub: 'c1', client_id: 'c1', scope: 'orders:read' },
        { typ: 'application/at+jwt' },
      );
      expectStatus(await call(server.url, 'GET', '/api/orders', { token: longTyp }), 200);
    });

    test('an expired token is 401 invalid_token', async () => {
      const token = await server.issuer.token({
        sub: 'c1',
        client_id: 'c1',
        scope: 'orders:read',
        iat: now() - 600,
        exp: now() - 60,
      });
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), 'expired');
    });

    test('a token whose nbf is in the future is 401 invalid_token', async () => {
      const token = await server.issuer.token({ sub: 'c1', client_id: 'c1', scope: 'orders:read', nbf: now() + 600 });
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), 'nbf');
    });

    test('a token whose iat is in the future beyond the clock tolerance is 401 invalid_token naming the claim', async () => {
      const future = await server.issuer.token({
        sub: 'c1',
        client_id: 'c1',
        scope: 'orders:read',
        iat: now() + 600,
        exp: now() + 1200,
      });
      const res = await call(server.url, 'GET', '/api/orders', { token: future });
      assertInvalidToken(res, 'iat');
      assert.match(bearerChallenge(res).error_description ?? '', /'iat'/, res.headers.get('www-authenticate') ?? '');
      assert.match(res.json.detail, /"iat"/, res.text);
      // Within the tolerance (AUTH_CLOCK_TOLERANCE_SECONDS, 5 s by default) a clock slightly ahead is fine.
      const slightlyAhead = await server.issuer.token({
        sub: 'c1',
        client_id: 'c1',
        scope: 'orders:read',
        iat: now() + 2,
      });
      expectStatus(await call(server.url, 'GET', '/api/orders', { token: slightlyAhead }), 200);
    });

    test('a token from another issuer or for another audience is 401 invalid_token', async () => {
      const wrongIss = await server.issuer.token({
        sub: 'c1',
        client_id: 'c1',
        scope: 'orders:read',
        iss: 'https://evil.test/oauth',
      });
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token: wrongIss }), 'wrong iss');
      const wrongAud = await server.issuer.token({
        sub: 'c1',
        client_id: 'c1',
        scope: 'orders:read',
        aud: 'https://other.test/api',
      });
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token: wrongAud }), 'wrong aud');
    });

    test('a JWT that is not typed at+jwt (plain JWT, ID token) is 401 invalid_token', async () => {
      const plain = await server.issuer.token({ sub: 'c1', client_id: 'c1', scope: 'orders:read' }, { typ: 'JWT' });
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token: plain }), 'typ JWT');
      // An ID token replayed at the API: same issuer and key, user claims, even with the API as audience.
      const idToken = await server.issuer.token(
        {
          sub: randomUUID(),
          aud: TEST_RESOURCE,
          nonce: 'n-0S6_WzA2Mj',
          email: 'a@example.test',
          name: 'A',
          auth_time: now(),
        },
        { typ: 'JWT' },
      );
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token: idToken }), 'id token');
    });

    test('an unsigned token (alg none) is 401 invalid_token', async () => {
      const payload = {
        iss: TEST_ISSUER,
        aud: TEST_RESOURCE,
        sub: 'c1',
        client_id: 'c1',
        scope: 'orders:read orders:write',
        iat: now(),
        exp: now() + 600,
        jti: randomUUID(),
      };
      for (const alg of ['none', 'None', 'NONE']) {
        const token = unsignedToken({ alg, typ: 'at+jwt' }, payload);
        assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), `alg ${alg}`);
      }
    });

    test('an HS256 token keyed with the public JWK (algorithm confusion) is 401 invalid_token', async () => {
      const jwk = server.issuer.publicJwk;
      const claims = { sub: 'c1', client_id: 'c1', scope: 'orders:read', iss: TEST_ISSUER, aud: TEST_RESOURCE };
      const secrets = [
        new TextEncoder().encode(JSON.stringify(jwk)),
        new TextEncoder().encode(JSON.stringify({ keys: [jwk] })),
        base64url.decode(jwk.x as string),
        new Uint8Array([...base64url.decode(jwk.x as string), ...base64url.decode(jwk.y as string)]),
      ];
      for (const secret of secrets) {
        const token = await new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'test-key' })
          .setIssuedAt()
          .setExpirationTime('10m')
          .sign(secret);
        assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), 'HS256');
      }
    });

    test('a token signed by a key the issuer does not publish is 401 invalid_token, with an unknown or a known kid', async () => {
      const { privateKey } = await generateKeyPair('ES256');
      for (const kid of ['other-key', 'test-key']) {
        const token = await server.issuer.token(
          { sub: 'c1', client_id: 'c1', scope: 'orders:read' },
          { key: privateKey, kid },
        );
        assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), `kid ${kid}`);
      }
    });

    test('a token carrying its own verification key in the header (jwk, jku) is 401 invalid_token', async () => {
      const { publicKey, privateKey } = await generateKeyPair('ES256');
      const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key' };
      const claims = { sub: 'c1', client_id: 'c1', scope: 'orders:read', iss: TEST_ISSUER, aud: TEST_RESOURCE };
      for (const extra of [{ jwk }, { jku: 'https://evil.test/jwks.json' }]) {
        const token = await new SignJWT(claims)
          .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'test-key', ...extra })
          .setIssuedAt()
          .setExpirationTime('10m')
          .sign(privateKey);
        assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), Object.keys(extra).join());
      }
    });

    test('credentials are checked before the body is parsed or validated', async () => {
      const readOnly = await server.issuer.clientToken('orders:read');
      const bodies: Array<{ rawBody: string; contentType?: string }> = [
        { rawBody: '{"CustomerId":"x"}' },
        { rawBody: '{' },
        { rawBody: '' },
        { rawBody: 'x', contentType: 'text/plain' },
      ];
      for (const body of bodies) {
        const anonymous = await call(server.url, 'POST', '/api/orders', body);
        expectProblem(anonymous, 401, undefined, PROBLEM);
        assert.equal(
          anonymous.headers.get('www-authenticate'),
          `Bearer realm="signet", resource_metadata="${METADATA}"`,
          JSON.stringify(body),
        );
        assertInvalidToken(
          await call(server.url, 'POST', '/api/orders', { ...body, token: 'not.a.token' }),
          JSON.stringify(body),
        );
        const underScoped = await call(server.url, 'POST', '/api/orders', { ...body, token: readOnly });
        expectProblem(underScoped, 403, undefined, PROBLEM);
      }
      expectProblem(await call(server.url, 'GET', '/api/orders?nope=1'), 401, undefined, PROBLEM);
    });

    test('a token whose payload was changed after signing is 401 invalid_token', async () => {
      const genuine = await server.issuer.clientToken('orders:read');
      expectStatus(await call(server.url, 'GET', '/api/orders', { token: genuine }), 200);
      const [header, payload, signature] = genuine.split('.') as [string, string, string];
      const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload)));
      const forged = base64url.encode(JSON.stringify({ ...claims, scope: 'orders:read orders:write' }));
      const token = `${header}.${forged}.${signature}`;
      assertInvalidToken(
        await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } }),
        'tampered',
      );
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), 'tampered (read)');
    });

    test('a token without the route scope is 403 with an insufficient_scope challenge naming it', async () => {
      const token = await server.issuer.clientToken('orders:read');
      const res = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } });
      expectProblem(res, 403, undefined, PROBLEM);
      assert.equal(
        res.headers.get('www-authenticate'),
        `Bearer realm="signet", error="insufficient_scope", scope="orders:write", resource_metadata="${METADATA}"`,
      );
      const none = await server.issuer.clientToken('profile');
      const read = await call(server.url, 'GET', '/api/orders', { token: none });
      expectProblem(read, 403, undefined, PROBLEM);
      assert.equal(bearerChallenge(read).scope, 'orders:read');
    });

    test('two Authorization header lines are 400 invalid_request on every API route, whichever they hold', async () => {
      const port = Number(new URL(server.url).port);
      const token = await server.issuer.clientToken('orders:read orders:write webhooks:manage');
      const pairs = [
        [`Authorization: Bearer ${token}`, `Authorization: Bearer ${token}`], // even the same valid token twice
        [`authorization: Bearer ${token}`, 'Authorization: Basic dXNlcjpwYXNz'],
        ['Authorization: Bearer not-a-valid-token', `AUTHORIZATION: Bearer ${token}`],
      ];
      const routes = [
        ['GET', '/api/orders', ''],
        ['POST', '/api/orders', JSON.stringify({ CustomerId: CUSTOMER, Total: 1 })],
        ['GET', '/api/orders/1', ''],
        ['POST', '/api/orders/1/pay', ''],
        ['GET', '/api/webhooks', ''],
        ['POST', '/api/webhooks', JSON.stringify({ Url: 'https://hooks.example/in', Events: ['order.created'] })],
      ];
      for (const [first, second] of pairs) {
        for (const [method, path, body] of routes) {
          const what = `${method} ${path} with ${first!.slice(0, 25)}… + ${second!.slice(0, 25)}…`;
          const res = await rawRequest(
            port,
            `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${first}\r\n${second}\r\n` +
              `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body!)}\r\n\r\n${body}`,
          );
          assert.equal(res.status, 400, `${what}: ${res.body}`);
          assert.equal(res.headers['content-type'], PROBLEM_JSON, `${what}: ${res.body}`);
          assert.match(res.json.detail, /more than one Authorization header field/, what);
          assert.equal(
            res.headers['www-authenticate'],
            `Bearer realm="signet", error="invalid_request", resource_metadata="${METADATA}"`,
            what,
          );
        }
      }
      // One line is still accepted (a control for the requests above).
      const one = await rawRequest(
        port,
        `GET /api/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      );
      assert.equal(one.status, 200, one.body);
    });
  });

  describe(`end-user and client tokens see different orders [${dialect}]`, () => {
    let server: TestServer;
    let client: string;
    let alice: string;
    let bob: string;
    const ALICE = randomUUID();
    const BOB = randomUUID();
    before(async () => {
      server = await startServer(dialect);
      client = await server.issuer.clientToken('orders:read orders:write');
      alice = await server.issuer.userToken('orders:read orders:write', ALICE);
      bob = await server.issuer.userToken('orders:read orders:write', BOB);
    });
    after(() => server.close());

    const create = async (token: string, customerId: string, total = 10): Promise<number> => {
      const res = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: customerId, Total: total },
      });
      assert.equal(res.status, 201, res.text);
      return res.json.Id;
    };

    test("another customer's order is 404, not 403, for GET, PUT, PATCH, DELETE and pay", async () => {
      const bobs = await create(bob, BOB);
      const path = `/api/orders/${bobs}`;
      const representation = (await call(server.url, 'GET', path, { token: bob })).json;
      const attempts: Array<[string, string, Parameters<typeof call>[3]]> = [
        ['GET', path, { token: alice }],
        ['HEAD', path, { token: alice }],
        ['PUT', path, { token: alice, body: { ...representation, CustomerId: ALICE } }],
        ['PUT', path, { token: alice, body: representation }],
        ['PATCH', path, { token: alice, body: { Total: 1 }, contentType: 'application/merge-patch+json' }],
        ['DELETE', path, { token: alice }],
        ['POST', `${path}/pay`, { token: alice }],
        ['POST', `${path}/cancel`, { token: alice }],
      ];
      for (const [method, url, options] of attempts) {
        const res = await call(server.url, method, url, options);
        assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
        if (method !== 'HEAD') expectProblem(res, 404, undefined, PROBLEM);
      }
      const unchanged = await call(server.url, 'GET', path, { token: bob });
      expectStatus(unchanged, 200);
      assert.deepEqual(unchanged.json, representation, "nothing changed Bob's order");
      const missing = await call(server.url, 'GET', '/api/orders/999999', { token: alice });
      const hidden = await call(server.url, 'GET', path, { token: alice });
      assert.equal(hidden.json.type, missing.json.type, 'a hidden order looks exactly like a missing one');
      assert.equal(hidden.json.detail, missing.json.detail.replace('999999', String(bobs)));
    });

    test('an end user can read, change and pay its own orders', async () => {
      const own = await create(alice, ALICE.toUpperCase());
      const path = `/api/orders/${own}`;
      expectStatus(await call(server.url, 'GET', path, { token: alice }), 200);
      expectStatus(
        await call(server.url, 'PATCH', path, {
          token: alice,
          body: { Total: 11 },
          contentType: 'application/merge-patch+json',
        }),
        200,
      );
      const paid = await call(server.url, 'POST', `${path}/pay`, { token: alice });
      assert.equal(paid.status, 200, paid.text);
      assert.equal(paid.json.Status, 'paid');
    });

    test("an end user's list holds only its own orders, whatever CustomerId filter it sends", async () => {
      const mine = [await create(alice, ALICE), await create(client, ALICE)];
      const theirs = [await create(bob, BOB), await create(client, CUSTOMER)];
      const list = await call(server.url, 'GET', '/api/orders?limit=100', { token: alice });
      expectStatus(list, 200);
      const ids = list.json.Items.map((o: { Id: number }) => o.Id);
      for (const id of mine) assert.ok(ids.includes(id), `own order ${id} listed`);
      for (const id of theirs) assert.ok(!ids.includes(id), `foreign order ${id} not listed`);
      assert.ok(list.json.Items.every((o: { CustomerId: string }) => o.CustomerId === ALICE.toLowerCase()));
      const filtered = await call(server.url, 'GET', `/api/orders?limit=100&CustomerId=${BOB}`, { token: alice });
      expectStatus(filtered, 200);
      assert.ok(
        filtered.json.Items.every((o: { CustomerId: string }) => o.CustomerId === ALICE.toLowerCase()),
        'a filter cannot widen what a user sees',
      );
    });

    test('an end user creating an order for another CustomerId is 403', async () => {
      const res = await call(server.url, 'POST', '/api/orders', { token: alice, body: { CustomerId: BOB, Total: 5 } });
      expectProblem(res, 403, undefined, PROBLEM);
      const list = await call(server.url, 'GET', '/api/orders?limit=100', { token: bob });
      assert.ok(
        list.json.Items.every((o: { Total: number }) => o.Total !== 5),
        'no order was created for Bob',
      );
    });

    test('a client-credentials token sees every order and can filter the list by CustomerId', async () => {
      const a = await create(alice, ALICE);
      const b = await create(bob, BOB);
      for (const id of [a, b]) expectStatus(await call(server.url, 'GET', `/api/orders/${id}`, { token: client }), 200);
      const all = (await call(server.url, 'GET', '/api/orders?limit=100', { token: client })).json.Items.map(
        (o: { Id: number }) => o.Id,
      );
      assert.ok(all.includes(a) && all.includes(b));
      const onlyBob = await call(server.url, 'GET', `/api/orders?limit=100&CustomerId=${BOB.toUpperCase()}`, {
        token: client,
      });
      expectStatus(onlyBob, 200);
      assert.ok(onlyBob.json.Items.length > 0);
      assert.ok(onlyBob.json.Items.every((o: { CustomerId: string }) => o.CustomerId === BOB.toLowerCase()));
      assert.ok(onlyBob.json.Items.some((o: { Id: number }) => o.Id === b));
      const forAnyone = await call(server.url, 'POST', '/api/orders', {
        token: client,
        body: { CustomerId: ALICE, Total: 3 },
      });
      expectStatus(forAnyone, 201);
    });
  });

  describe(`verified-token cache [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect, { AUTH_CLOCK_TOLERANCE_SECONDS: '0' });
    });
    after(() => server.close());

    test('a cached verification never outlives the token: it is rejected once exp has passed', async (t) => {
      const exp = now() + 60;
      const token = await server.issuer.token({ sub: 'c-cache', client_id: 'c-cache', scope: 'orders:read', exp });
      const first = await call(server.url, 'GET', '/api/orders', { token });
      assert.equal(first.status, 200, 'accepted (and cached) while valid');
      // The server runs in this process: a mocked Date moves its clock (the cache's and jose's) to the
      // token's exp without waiting for it; timers stay real, so HTTP and the database work as ever.
      t.mock.timers.enable({ apis: ['Date'], now: exp * 1000 - 1 });
      const lastMillisecond = await call(server.url, 'GET', '/api/orders', { token });
      assert.equal(lastMillisecond.status, 200, 'accepted until its exp');
      t.mock.timers.setTime(exp * 1000);
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), 'expired while cached');
      assertInvalidToken(await call(server.url, 'GET', '/api/orders', { token }), 'stays rejected');
    });
  });
}

for (const dialect of testDialects()) {
  describe(`the authorization server and two Authorization lines [${dialect}]`, () => {
    let server: AuthTestServer;
    before(async () => {
      server = await startAuthServer(dialect);
    });
    after(() => server.close());

    test('a token request with two client_secret_basic lines is refused with 400, not authenticated by the first', async () => {
      const port = Number(new URL(server.url).port);
      const client = await server.createClient();
      const other = await server.createClient();
      const basic = (id: string, secret: string | undefined): string =>
        `Authorization: Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret ?? '')}`).toString('base64')}`;
      const form = 'grant_type=client_credentials&scope=orders%3Aread';
      const tokenRequest = (lines: string[]): Promise<RawResponse> =>
        rawRequest(
          port,
          `POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${lines.map((line) => `${line}\r\n`).join('')}` +
            `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n${form}`,
        );
      const one = await tokenRequest([basic(client.clientId, client.clientSecret)]);
      assert.equal(one.status, 200, `one line is the control: ${one.body}`);
      for (const lines of [
        [basic(client.clientId, client.clientSecret), basic(other.clientId, other.clientSecret)],
        [basic(client.clientId, client.clientSecret), basic(client.clientId, client.clientSecret)],
      ]) {
        const res = await tokenRequest(lines);
        assert.equal(res.status, 400, res.body);
        assert.equal(res.json?.access_token, undefined, res.body);
        assert.match(res.json.detail, /more than one Authorization header field/, res.body);
      }
    });
  });
}
