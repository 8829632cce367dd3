// Plain OAuth 2.0 on the authorization server, without OpenID Connect: a code flow asking only for API
// scopes (RFC 6749 §4.1, through openid-client 6) gets an access token and a refresh token and no ID
// token; and client credentials naming an unknown RFC 8707 resource is invalid_target (RFC 8707 §2).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { discover } from '../helpers/openid-client.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectStatus } from '../helpers/expect.ts';
import { fetchWithin } from '../helpers/http.ts';
import { runAuthorizationFlow } from '../helpers/oauth-flow.ts';
import { tokenRequest } from '../helpers/oauth-requests.ts';

type TestUser = Awaited<ReturnType<AuthTestServer['createUser']>>;
type TestClient = Awaited<ReturnType<AuthTestServer['createClient']>>;

for (const dialect of testDialects()) {
  describe(`plain OAuth 2.0 [${dialect}]`, () => {
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

    test('a code flow with API scopes only yields an access token and a refresh token, and no ID token', async () => {
      const pkceCodeVerifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        scope: 'orders:read',
        code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
        code_challenge_method: 'S256',
        state,
        redirect_uri: registered.redirectUri,
      });
      const { callback } = await runAuthorizationFlow({
        base: server.url,
        authorizeQuery: url.search.slice(1),
        email: user.email,
        password: user.password,
      });
      assert.equal(callback.searchParams.get('error'), null, callback.href);
      assert.equal(callback.searchParams.get('iss'), server.issuer, 'RFC 9207 iss, as for OIDC requests');
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier, expectedState: state });
      assert.equal(tokens.id_token, undefined, 'no ID token without openid (OIDC Core §3.1.2.1)');
      assert.ok(tokens.refresh_token, 'a refresh token, as for every client allowed the grant');
      assert.equal(tokens.scope, 'orders:read');
      const access = decodeJwt(tokens.access_token);
      assert.equal(access.aud, server.resource);
      assert.equal(access.sub, user.id);
      assert.equal(access.scope, 'orders:read');
      const orders = await fetchWithin(`${server.url}/api/orders`, {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
      await expectStatus(orders, 200);

      // The refresh rotates as for OIDC clients, and still issues no ID token.
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
      assert.equal(refreshed.id_token, undefined);
      assert.ok(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token);
      assert.equal(decodeJwt(refreshed.access_token).scope, 'orders:read');
    });

    test('client credentials with an unknown resource and no scope is invalid_target (RFC 8707 §2)', async () => {
      const answer = await tokenRequest(
        server,
        { grant_type: 'client_credentials', resource: 'https://elsewhere.example/api' },
        { basic: [registered.clientId, registered.clientSecret!] },
      );
      expectStatus(answer, 400);
      assert.equal(answer.body.error, 'invalid_target', answer.text);
      assert.equal(typeof answer.body.error_description, 'string', answer.text);
    });

    test('client credentials with the API as resource and no scope still gets the default scopes', async () => {
      const answer = await tokenRequest(
        server,
        { grant_type: 'client_credentials', resource: server.resource },
        { basic: [registered.clientId, registered.clientSecret!] },
      );
      expectStatus(answer, 200);
      assert.equal(answer.body.scope, 'orders:read orders:write', answer.text);
    });
  });
}
