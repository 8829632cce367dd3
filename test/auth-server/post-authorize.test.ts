// POST /oauth/authorize with a form body (OIDC Core §3.1.2.1), as mod_auth_openidc sends it with
// `OIDCProviderAuthRequestMethod POST`: the whole code flow from a POSTed authorization request to
// tokens that openid-client accepts, through real HTTP. The POST is answered with 303 to the GET of the
// same request (src/auth-server/provider/request-shaping.ts), so every guarantee of the GET holds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { discover } from '../helpers/openid-client.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectStatus } from '../helpers/expect.ts';
import { fetchWithin } from '../helpers/http.ts';
import { CookieJar, runAuthorizationFlow } from '../helpers/oauth-flow.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

type TestUser = Awaited<ReturnType<AuthTestServer['createUser']>>;
type TestClient = Awaited<ReturnType<AuthTestServer['createClient']>>;

interface AuthorizationRequest {
  params: URLSearchParams;
  pkceCodeVerifier: string;
  state: string;
  nonce: string;
}

/** The parameters openid-client would put in the authorization URL, to be POSTed as a form instead. */
async function authorizationRequest(config: client.Configuration, redirectUri: string): Promise<AuthorizationRequest> {
  const pkceCodeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    scope: 'openid profile email',
    code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    redirect_uri: redirectUri,
  });
  return { params: url.searchParams, pkceCodeVerifier, state, nonce };
}

async function postAuthorize(server: AuthTestServer, body: string, jar?: CookieJar): Promise<Response> {
  const response = await fetchWithin(`${server.issuer}/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...FORM, ...(jar ? { cookie: jar.header() } : {}) },
    body,
  });
  jar?.store(response);
  return response;
}

for (const dialect of testDialects()) {
  describe(`POST /oauth/authorize with a form body [${dialect}]`, () => {
    let server: AuthTestServer;
    let user: TestUser;
    let registered: TestClient;
    let config: client.Configuration;

    before(async () => {
      server = await startAuthServer(dialect);
      user = await server.createUser();
      registered = await server.createClient();
      config = await discover(server, registered);
    });
    after(() => server.close());

    test('the code flow started by a POSTed authorization request ends in tokens openid-client accepts, and SSO holds', async () => {
      const request = await authorizationRequest(config, registered.redirectUri);
      const posted = await postAuthorize(server, request.params.toString());
      const body = await posted.text();
      assert.equal(posted.status, 303, body);
      assert.equal(posted.headers.get('cache-control'), 'no-store');
      const location = new URL(posted.headers.get('location') ?? '', server.url);
      assert.equal(`${location.origin}${location.pathname}`, `${server.issuer}/authorize`);
      assert.deepEqual(
        [...location.searchParams].sort(),
        [...request.params].sort(),
        'the GET carries exactly the posted parameters',
      );

      // The browser follows the 303 with a GET: login, consent, back to the client with code, state and iss.
      const { callback, jar } = await runAuthorizationFlow({
        base: server.url,
        authorizeQuery: location.search.slice(1),
        email: user.email,
        password: user.password,
      });
      assert.equal(callback.searchParams.get('iss'), server.issuer, 'RFC 9207');
      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: request.pkceCodeVerifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
        idTokenExpected: true,
      });
      assert.equal(tokens.claims()?.sub, user.id);
      assert.ok(tokens.refresh_token, 'a refresh token');
      assert.equal(decodeJwt(tokens.access_token).aud, server.resource);

      // A second POSTed request with the session cookie: no login page, straight back with a code.
      const again = await authorizationRequest(config, registered.redirectUri);
      const second = await postAuthorize(server, again.params.toString(), jar);
      await expectStatus(second, 303);
      const { callback: silent, pages } = await runAuthorizationFlow({
        base: server.url,
        authorizeQuery: new URL(second.headers.get('location') ?? '', server.url).search.slice(1),
        email: user.email,
        password: user.password,
        jar,
      });
      assert.deepEqual(
        pages.map((p) => p.url),
        [],
        'the session (and the remembered consent) is used: no page is shown',
      );
      const secondTokens = await client.authorizationCodeGrant(config, silent, {
        pkceCodeVerifier: again.pkceCodeVerifier,
        expectedState: again.state,
        expectedNonce: again.nonce,
      });
      assert.equal(secondTokens.claims()?.sub, user.id);
    });

    test('a POSTed request keeps the GET guarantees: plain PKCE and the implicit flow are still refused', async () => {
      const request = await authorizationRequest(config, registered.redirectUri);
      const plain = new URLSearchParams(request.params);
      plain.set('code_challenge_method', 'plain');
      const implicit = new URLSearchParams(request.params);
      implicit.set('response_type', 'token');
      for (const [form, error] of [
        [plain, 'invalid_request'],
        [implicit, 'unsupported_response_type'],
      ] as const) {
        const posted = await postAuthorize(server, form.toString());
        await expectStatus(posted, 303);
        const get = await fetchWithin(new URL(posted.headers.get('location') ?? '', server.url), {
          redirect: 'manual',
        });
        const text = await get.text();
        const answer = new URL(get.headers.get('location') ?? 'about:blank');
        assert.equal(answer.searchParams.get('error') ?? (text.includes(error) ? error : null), error, text);
      }
    });

    test('a POST that is no form is 415 problem+json; a 405 on the endpoint lists POST in Allow', async () => {
      const json = await fetchWithin(`${server.issuer}/authorize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: registered.clientId }),
      });
      const body = await json.text();
      assert.equal(json.status, 415, body);
      assert.equal(json.headers.get('content-type'), 'application/problem+json');
      assert.match(body, /application\/x-www-form-urlencoded/);

      const put = await fetchWithin(`${server.issuer}/authorize`, { method: 'PUT' });
      await put.arrayBuffer();
      assert.equal(put.status, 405);
      assert.equal(put.headers.get('allow'), 'GET, HEAD, POST');
    });
  });
}
