// UserInfo (OIDC Core §5.3) with the access token the code flow returns, through openid-client 6 as a
// relying party calls it by default: also for clients whose tokens are RFC 9068 JWTs for the API (RFC
// 8707 audience), which oidc-provider's own UserInfo refuses (src/auth-server/tokens/userinfo.ts). Claims
// follow the granted scopes; tokens of another issuer, expired ones and ones granted without openid are
// refused with a description that says why.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import * as client from 'openid-client';
import { discover } from '../helpers/openid-client.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin } from '../helpers/http.ts';
import { runAuthorizationFlow } from '../helpers/oauth-flow.ts';

type TestUser = Awaited<ReturnType<AuthTestServer['createUser']>>;
type TestClient = Awaited<ReturnType<AuthTestServer['createClient']>>;

interface UserinfoAnswer {
  status: number;
  body: Record<string, unknown>;
  text: string;
  wwwAuthenticate: string;
}

async function callUserinfo(server: AuthTestServer, accessToken: string): Promise<UserinfoAnswer> {
  const response = await fetchWithin(`${server.issuer}/userinfo`, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // `text` shows what it was
  }
  return { status: response.status, body, text, wwwAuthenticate: response.headers.get('www-authenticate') ?? '' };
}

function expectRefusal(answer: UserinfoAnswer, status: number, error: string, description: RegExp): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body.error, error, answer.text);
  assert.match(String(answer.body.error_description), description, answer.text);
  assert.match(answer.wwwAuthenticate, new RegExp(`^Bearer .*error="${error}"`), answer.wwwAuthenticate);
}

async function apiStatus(server: AuthTestServer, accessToken: string): Promise<number> {
  const response = await fetchWithin(`${server.url}/api/orders`, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  await response.arrayBuffer();
  return response.status;
}

for (const dialect of testDialects()) {
  describe(`UserInfo with the code flow's access token [${dialect}]`, () => {
    let server: AuthTestServer;
    let user: TestUser;
    let apiClient: TestClient;
    let apiConfig: client.Configuration;

    /** The code flow as openid-client runs it; returns the token response. */
    async function signIn(
      config: client.Configuration,
      registered: TestClient,
      scope: string,
    ): Promise<Awaited<ReturnType<typeof client.authorizationCodeGrant>>> {
      const pkceCodeVerifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        scope,
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
      return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier, expectedState: state });
    }

    /** An access token signed with the server's own current access-token key, claims as given. */
    async function signWithServerKey(claims: Record<string, unknown>): Promise<string> {
      const jwk = server.app.authServer!.keys.jwks.keys.find((k: JWK) => k.alg === 'ES256');
      assert.ok(jwk, 'the server has an ES256 signing key');
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({
        iss: server.issuer,
        aud: server.resource,
        sub: user.id,
        client_id: apiClient.clientId,
        scope: 'openid profile email orders:read',
        iat: now - 60,
        exp: now + 600,
        jti: randomUUID(),
        ...claims,
      })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: jwk.kid! })
        .sign(await importJWK(jwk, 'ES256'));
    }

    before(async () => {
      server = await startAuthServer(dialect);
      user = await server.createUser();
      apiClient = await server.createClient(); // registered with the orders scopes: API access tokens
      apiConfig = await discover(server, apiClient);
    });
    after(() => server.close());

    test('fetchUserInfo accepts the access token of a client with API scopes (aud = the API) and returns sub, email, name', async () => {
      const tokens = await signIn(apiConfig, apiClient, 'openid profile email');
      assert.equal(decodeJwt(tokens.access_token).aud, server.resource, 'an RFC 8707 token for the API');
      const claims = await client.fetchUserInfo(apiConfig, tokens.access_token, user.id);
      assert.deepEqual({ ...claims }, { sub: user.id, email: user.email, name: user.name });
      assert.equal(await apiStatus(server, tokens.access_token), 200, 'the same token still works on the API');
    });

    test('a token whose grant was revoked (RFC 7009, the refresh token) is refused, as at introspection', async () => {
      const tokens = await signIn(apiConfig, apiClient, 'openid email');
      assert.equal((await callUserinfo(server, tokens.access_token)).status, 200, 'valid before the revocation');
      assert.ok(tokens.refresh_token, 'the code flow returns a refresh token');
      await client.tokenRevocation(apiConfig, tokens.refresh_token);
      expectRefusal(await callUserinfo(server, tokens.access_token), 401, 'invalid_token', /grant .* was revoked/);
    });

    test('the claims follow the granted scopes: sub always, email with email, name with profile', async () => {
      for (const [scope, expected] of [
        ['openid', { sub: user.id }],
        ['openid email', { sub: user.id, email: user.email }],
        ['openid profile', { sub: user.id, name: user.name }],
      ] as const) {
        const tokens = await signIn(apiConfig, apiClient, scope);
        const claims = await client.fetchUserInfo(apiConfig, tokens.access_token, user.id);
        assert.deepEqual({ ...claims }, expected, `scope ${scope}`);
      }
    });

    test('fetchUserInfo accepts the access token of a client without API scopes (a userinfo-only token)', async () => {
      const signInOnly = await server.createClient({ scopes: [], redirectUris: ['http://127.0.0.1:9/sign-in-only'] });
      const config = await discover(server, signInOnly);
      const tokens = await signIn(config, signInOnly, 'openid email');
      const claims = await client.fetchUserInfo(config, tokens.access_token, user.id);
      assert.deepEqual({ ...claims }, { sub: user.id, email: user.email });
    });

    test('a token whose grant did not include openid is refused with 403 insufficient_scope naming openid', async () => {
      const tokens = await signIn(apiConfig, apiClient, 'orders:read');
      assert.equal(tokens.id_token, undefined);
      const answer = await callUserinfo(server, tokens.access_token);
      expectRefusal(answer, 403, 'insufficient_scope', /without the openid scope/);
      assert.match(answer.wwwAuthenticate, /scope="openid"/);
    });

    test('a client-credentials token (no user, no openid) is refused', async () => {
      const tokens = await client.clientCredentialsGrant(apiConfig, { scope: `${server.resource}/.default` });
      expectRefusal(await callUserinfo(server, tokens.access_token), 403, 'insufficient_scope', /openid/);
    });

    test('an expired access token is refused with invalid_token saying it expired', async () => {
      const now = Math.floor(Date.now() / 1000);
      const expired = await signWithServerKey({ iat: now - 1000, exp: now - 100 });
      expectRefusal(await callUserinfo(server, expired), 401, 'invalid_token', /expired/);
    });

    test('a token from another issuer is refused with invalid_token naming the issuer', async () => {
      // Even signed with our own key: the issuer is checked, not only the signature.
      const foreign = await signWithServerKey({ iss: 'https://other-issuer.example/oauth' });
      expectRefusal(await callUserinfo(server, foreign), 401, 'invalid_token', /another issuer/);
    });

    test('a token claiming this issuer but signed with another key is refused', async () => {
      const { privateKey } = await generateKeyPair('ES256');
      const now = Math.floor(Date.now() / 1000);
      const forged = await new SignJWT({
        iss: server.issuer,
        aud: server.resource,
        sub: user.id,
        client_id: apiClient.clientId,
        scope: 'openid profile email',
        iat: now,
        exp: now + 600,
      })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'not-ours' })
        .sign(privateKey);
      expectRefusal(await callUserinfo(server, forged), 401, 'invalid_token', /signature/);
    });

    test('a token for an audience that is not one of our resources is refused, at UserInfo and at the API', async () => {
      const elsewhere = await signWithServerKey({ aud: 'https://elsewhere.example/api' });
      expectRefusal(await callUserinfo(server, elsewhere), 401, 'invalid_token', /not for a resource of this server/);
      assert.equal(await apiStatus(server, elsewhere), 401, 'the API still requires its own audience');
    });

    test('an ID token presented as an access token is refused', async () => {
      const tokens = await signIn(apiConfig, apiClient, 'openid');
      assert.ok(tokens.id_token);
      expectRefusal(await callUserinfo(server, tokens.id_token), 401, 'invalid_token', /not an access token/);
    });
  });
}
