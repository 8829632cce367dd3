// End to end with a real relying party: openid-client v6 discovers the issuer, runs the code flow with
// PKCE, state and nonce (it validates the ID token's signature through the JWKS, iss, aud, nonce, and the
// RFC 9207 `iss` authorization response parameter), refreshes, uses client credentials, introspects and
// revokes. The access tokens it gets must then work against the orders API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import { discover } from '../helpers/openid-client.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin } from '../helpers/http.ts';
import { runAuthorizationFlow } from '../helpers/oauth-flow.ts';
import { expectStatus } from '../helpers/expect.ts';

type TestUser = Awaited<ReturnType<AuthTestServer['createUser']>>;
type TestClient = Awaited<ReturnType<AuthTestServer['createClient']>>;
type Tokens = Awaited<ReturnType<typeof client.authorizationCodeGrant>>;

/** Rejects with an OAuth error response carrying `code` (`invalid_grant`, …). */
function oauthError(code: string): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof client.ResponseBodyError, `expected an OAuth error response, got ${String(err)}`);
    assert.equal(err.error, code, err.error_description);
    return true;
  };
}

async function getOrders(server: AuthTestServer, accessToken: string): Promise<number> {
  const response = await fetchWithin(`${server.url}/api/orders`, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  await response.arrayBuffer();
  return response.status;
}

for (const dialect of testDialects()) {
  describe(`openid-client relying party [${dialect}]`, () => {
    let server: AuthTestServer;
    let user: TestUser;
    let registered: TestClient;
    let config: client.Configuration;

    /** The whole code flow as an application does it: authorization URL, login and consent, code exchange. */
    async function signIn(
      rp: client.Configuration = config,
      redirectUri: string = registered.redirectUri,
    ): Promise<{ tokens: Tokens; callback: URL }> {
      const pkceCodeVerifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(rp, {
        scope: 'openid profile email',
        code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
        redirect_uri: redirectUri,
      });
      const { callback } = await runAuthorizationFlow({
        base: server.url,
        authorizeQuery: url.search.slice(1),
        email: user.email,
        password: user.password,
      });
      const tokens = await client.authorizationCodeGrant(rp, callback, {
        pkceCodeVerifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
      return { tokens, callback };
    }

    before(async () => {
      server = await startAuthServer(dialect);
      user = await server.createUser();
      registered = await server.createClient();
      config = await discover(server, registered);
    });
    after(() => server.close());

    test('discovery finds the issuer under /oauth with its endpoints, S256-only PKCE, code-only responses and RFC 9207 iss', () => {
      const metadata = config.serverMetadata();
      const base = `${server.url}/oauth`;
      assert.equal(metadata.issuer, base);
      assert.equal(metadata.authorization_endpoint, `${base}/authorize`);
      assert.equal(metadata.token_endpoint, `${base}/token`);
      assert.equal(metadata.jwks_uri, `${base}/jwks`);
      assert.equal(metadata.userinfo_endpoint, `${base}/userinfo`);
      assert.equal(metadata.revocation_endpoint, `${base}/revoke`);
      assert.equal(metadata.introspection_endpoint, `${base}/introspect`);
      assert.equal(metadata.end_session_endpoint, `${base}/session/end`);
      assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
      assert.deepEqual(metadata.response_types_supported, ['code']);
      assert.equal(metadata.authorization_response_iss_parameter_supported, true);
    });

    test('RFC 8414 metadata at /.well-known/oauth-authorization-server/oauth names the same issuer', async () => {
      const response = await fetchWithin(`${server.url}/.well-known/oauth-authorization-server/oauth`);
      await expectStatus(response, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      const metadata = (await response.json()) as { issuer?: unknown; token_endpoint?: unknown };
      assert.equal(metadata.issuer, server.issuer);
      assert.equal(metadata.token_endpoint, config.serverMetadata().token_endpoint);
    });

    test('the code flow with PKCE, state and nonce yields an ID token with sub, email, name and auth_time that openid-client accepts', async () => {
      const startedAt = Math.floor(Date.now() / 1000);
      const { tokens, callback } = await signIn();
      assert.equal(
        callback.searchParams.get('iss'),
        server.issuer,
        'RFC 9207: the authorization response names the issuer',
      );
      const claims = tokens.claims();
      assert.ok(claims, 'an ID token was returned');
      assert.equal(claims.iss, server.issuer);
      assert.equal(claims.aud, registered.clientId);
      assert.equal(claims.sub, user.id);
      assert.equal(claims.email, user.email);
      assert.equal(claims.name, user.name);
      assert.equal(typeof claims.auth_time, 'number');
      assert.ok(
        claims.auth_time! >= startedAt - 5 && claims.auth_time! <= Math.floor(Date.now() / 1000) + 5,
        `auth_time ${claims.auth_time} is the login just made`,
      );
    });

    test('the code flow access token is an RFC 9068 JWT for the API with the orders scopes, and the API accepts it', async () => {
      const { tokens } = await signIn();
      assert.equal(tokens.token_type, 'bearer');
      assert.equal(decodeProtectedHeader(tokens.access_token).typ, 'at+jwt');
      const payload = decodeJwt(tokens.access_token);
      assert.equal(payload.iss, server.issuer);
      assert.equal(payload.aud, server.resource);
      assert.equal(payload.sub, user.id);
      assert.equal(payload.client_id, registered.clientId);
      assert.ok(
        typeof payload.scope === 'string' && payload.scope.split(' ').includes('orders:read'),
        `scope: ${String(payload.scope)}`,
      );
      assert.equal(await getOrders(server, tokens.access_token), 200);
    });

    test('a refresh rotates the refresh token; replaying the old one fails with invalid_grant and revokes the new one too', async () => {
      const { tokens } = await signIn();
      const first = tokens.refresh_token;
      assert.ok(first, 'the code flow returned a refresh token');

      const refreshed = await client.refreshTokenGrant(config, first);
      assert.ok(refreshed.refresh_token, 'the refresh returned a new refresh token');
      assert.notEqual(refreshed.refresh_token, first);
      assert.equal(refreshed.claims()?.sub, user.id);
      assert.equal(await getOrders(server, refreshed.access_token), 200);

      await assert.rejects(
        client.refreshTokenGrant(config, first),
        oauthError('invalid_grant'),
        'the rotated-out token is refused',
      );
      await assert.rejects(
        client.refreshTokenGrant(config, refreshed.refresh_token),
        oauthError('invalid_grant'),
        'reuse revoked the whole family',
      );
    });

    test('client credentials with <resource>/.default yields both orders scopes, no refresh token and no ID token', async () => {
      const tokens = await client.clientCredentialsGrant(config, { scope: `${server.resource}/.default` });
      assert.equal(tokens.scope, 'orders:read orders:write');
      assert.equal(tokens.refresh_token, undefined);
      assert.equal(tokens.id_token, undefined);
      assert.equal(decodeProtectedHeader(tokens.access_token).typ, 'at+jwt');
      const payload = decodeJwt(tokens.access_token);
      assert.equal(payload.aud, server.resource);
      assert.equal(payload.sub, registered.clientId, 'RFC 9068 §2.2: a client acting for itself is the subject');
      assert.equal(payload.client_id, registered.clientId);
      assert.equal(payload.scope, 'orders:read orders:write');
      assert.equal(await getOrders(server, tokens.access_token), 200);
    });

    test('client credentials with an explicit scope yields only that scope', async () => {
      const tokens = await client.clientCredentialsGrant(config, { scope: 'orders:read' });
      assert.equal(tokens.scope, 'orders:read');
      assert.equal(tokens.refresh_token, undefined);
      assert.equal(tokens.id_token, undefined);
      const payload = decodeJwt(tokens.access_token);
      assert.equal(payload.aud, server.resource);
      assert.equal(payload.scope, 'orders:read');
      assert.equal(await getOrders(server, tokens.access_token), 200);
    });

    test('client credentials naming the API with an RFC 8707 resource indicator yields a token for that audience', async () => {
      const all = await client.clientCredentialsGrant(config, {
        resource: server.resource,
        scope: `${server.resource}/.default`,
      });
      assert.equal(all.scope, 'orders:read orders:write');
      assert.equal(decodeJwt(all.access_token).aud, server.resource);
      assert.equal(await getOrders(server, all.access_token), 200);

      const readOnly = await client.clientCredentialsGrant(config, { resource: server.resource, scope: 'orders:read' });
      assert.equal(readOnly.scope, 'orders:read');
      assert.equal(decodeJwt(readOnly.access_token).aud, server.resource);
      assert.equal(await getOrders(server, readOnly.access_token), 200);
    });

    test('introspection shows a refresh token active with its client_id and sub, and inactive once revoked', async () => {
      const { tokens } = await signIn();
      const refreshToken = tokens.refresh_token;
      assert.ok(refreshToken);

      const active = await client.tokenIntrospection(config, refreshToken);
      assert.equal(active.active, true);
      assert.equal(active.client_id, registered.clientId);
      assert.equal(active.sub, user.id);
      assert.equal(active.iss, server.issuer);

      await client.tokenRevocation(config, refreshToken);
      assert.deepEqual(await client.tokenIntrospection(config, refreshToken), { active: false });
      await assert.rejects(
        client.refreshTokenGrant(config, refreshToken),
        oauthError('invalid_grant'),
        'a revoked refresh token cannot be used',
      );
    });

    test('a public client learns nothing from the introspection endpoint', async () => {
      const publicClient = await server.createClient({
        type: 'public',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['http://127.0.0.1:9/public-callback'],
      });
      assert.equal(publicClient.clientSecret, undefined);
      const publicConfig = await discover(server, publicClient);
      const { tokens } = await signIn(publicConfig, publicClient.redirectUri);
      const refreshToken = tokens.refresh_token;
      assert.ok(refreshToken, 'the public client got a refresh token');

      // RFC 7662 §2.1: only protected resources and confidential clients may introspect. The refusal may be
      // an error or an answer that reveals nothing; either way the token's state must not leak.
      let answer: client.IntrospectionResponse | undefined;
      try {
        answer = await client.tokenIntrospection(publicConfig, refreshToken);
      } catch (err) {
        assert.ok(err instanceof client.ResponseBodyError, `expected an OAuth error response, got ${String(err)}`);
      }
      if (answer !== undefined)
        assert.deepEqual(answer, { active: false }, 'the public client must not see the token as active');
      // The token really is active: a refresh with it still works.
      const refreshed = await client.refreshTokenGrant(publicConfig, refreshToken);
      assert.ok(refreshed.access_token);
    });
  });
}
