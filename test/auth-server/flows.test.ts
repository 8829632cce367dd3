// The authorization server's flows in the exact request shapes of docs/guides/signing-in-users.md, over raw HTTP, and
// the ways they must fail.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin, locationOf } from '../helpers/http.ts';
import { CookieJar, pkcePair } from '../helpers/oauth-flow.ts';
import { authorizeWithLogin, exchangeCode, jwtParts, refresh, tokenRequest } from '../helpers/oauth-requests.ts';
import { expectJson, expectStatus } from '../helpers/expect.ts';

type Client = Awaited<ReturnType<AuthTestServer['createClient']>>;
type User = Awaited<ReturnType<AuthTestServer['createUser']>>;

for (const dialect of testDialects()) {
  describe(`authorization server flows [${dialect}]`, () => {
    let server: AuthTestServer;
    let client: Client;
    let user: User;
    before(async () => {
      server = await startAuthServer(dialect);
      client = await server.createClient();
      user = await server.createUser();
    });
    after(() => server.close());

    test('the contract code flow: no redirect_uri, no code_challenge_method, no grant_type; state and nonce round-trip', async () => {
      const flow = await authorizeWithLogin(server, client, user, { state: 'af0ifjsldkj', nonce: 'n-0S6_WzA2Mj' });
      assert.equal(flow.flow.callback.origin + flow.flow.callback.pathname, client.redirectUri);
      assert.equal(flow.flow.callback.searchParams.get('state'), 'af0ifjsldkj');
      assert.equal(
        flow.flow.callback.searchParams.get('iss'),
        server.issuer,
        'RFC 9207 iss in the authorization response',
      );
      const tokens = await exchangeCode(server, client, flow);
      expectStatus(tokens, 200);
      for (const field of ['access_token', 'id_token', 'refresh_token', 'expires_in', 'scope'])
        assert.ok(tokens.body[field], field);
      assert.equal(tokens.body.token_type, 'Bearer');
      assert.equal(tokens.headers.get('cache-control'), 'no-store');
      const id = jwtParts(tokens.body.id_token).payload;
      assert.equal(id.sub, user.id);
      assert.equal(id.email, user.email);
      assert.equal(id.name, user.name);
      assert.equal(id.nonce, 'n-0S6_WzA2Mj');
      assert.equal(id.aud, client.clientId);
      assert.equal(id.iss, server.issuer);
      for (const claim of ['iat', 'exp', 'auth_time']) assert.equal(typeof id[claim], 'number', claim);
      const access = jwtParts(tokens.body.access_token);
      assert.equal(access.header.typ, 'at+jwt');
      assert.equal(access.header.alg, 'ES256');
      assert.equal(access.payload.aud, server.resource);
      assert.equal(access.payload.sub, user.id);
      assert.equal(access.payload.client_id, client.clientId);
      // The granted OIDC scopes too: they let the token into UserInfo (docs/guides/signing-in-users.md).
      assert.equal(access.payload.scope, 'openid profile email orders:read orders:write');
      assert.equal(Number(access.payload.exp) - Number(access.payload.iat), 900, 'default lifetime 15 minutes');
    });

    test('the user access token works on the API and sees only that user as customer', async () => {
      const tokens = await exchangeCode(server, client, await authorizeWithLogin(server, client, user));
      expectStatus(tokens, 200);
      const create = await fetchWithin(`${server.url}/api/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${String(tokens.body.access_token)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ CustomerId: user.id, Total: 12.5, Currency: 'EUR' }),
      });
      assert.equal(create.status, 201, await create.clone().text());
    });

    test('the standard shapes work too: grant_type, redirect_uri and client_secret_basic', async () => {
      const flow = await authorizeWithLogin(server, client, user, {
        redirect_uri: client.redirectUri,
        code_challenge_method: 'S256',
      });
      const tokens = await tokenRequest(
        server,
        {
          grant_type: 'authorization_code',
          code: flow.code,
          code_verifier: flow.verifier,
          redirect_uri: client.redirectUri,
        },
        { basic: [client.clientId, client.clientSecret!] },
      );
      expectStatus(tokens, 200);
    });

    test('a public client uses PKCE without a secret and gets tokens', async () => {
      const spa = await server.createClient({
        type: 'public',
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['http://127.0.0.1:9/spa'],
      });
      const tokens = await exchangeCode(server, spa, await authorizeWithLogin(server, spa, user));
      expectStatus(tokens, 200);
      assert.ok(tokens.body.refresh_token);
    });

    test('rejects a reused authorization code and revokes the tokens it issued', async () => {
      const flow = await authorizeWithLogin(server, client, user);
      const first = await exchangeCode(server, client, flow);
      expectStatus(first, 200);
      const second = await exchangeCode(server, client, flow);
      expectStatus(second, 400);
      assert.equal(second.body.error, 'invalid_grant');
      const afterReuse = await refresh(server, client, first.body.refresh_token);
      expectStatus(afterReuse, 400, 'the refresh token from the first exchange is revoked');
      assert.equal(afterReuse.body.error, 'invalid_grant');
    });

    test('two concurrent redemptions of one code: exactly one succeeds', async () => {
      const flow = await authorizeWithLogin(server, client, user);
      const results = await Promise.all([
        exchangeCode(server, client, flow),
        exchangeCode(server, client, flow),
        exchangeCode(server, client, flow),
      ]);
      assert.equal(results.filter((r) => r.status === 200).length, 1, JSON.stringify(results.map((r) => r.body)));
      for (const r of results.filter((x) => x.status !== 200)) assert.equal(r.body.error, 'invalid_grant');
    });

    test('a wrong or missing code_verifier is invalid_grant', async () => {
      const flow = await authorizeWithLogin(server, client, user);
      const wrong = await exchangeCode(server, client, { code: flow.code, verifier: pkcePair().verifier });
      expectStatus(wrong, 400);
      assert.equal(wrong.body.error, 'invalid_grant');
      const other = await authorizeWithLogin(server, client, user);
      const missing = await tokenRequest(server, {
        code: other.code,
        client_id: client.clientId,
        client_secret: client.clientSecret!,
      });
      expectStatus(missing, 400);
      assert.equal(missing.body.error, 'invalid_grant');
    });

    test('an authorization request without code_challenge is refused (PKCE required for every client)', async () => {
      const response = await fetchWithin(
        `${server.issuer}/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'openid' })}`,
        { redirect: 'manual' },
      );
      const location = await locationOf(response);
      assert.equal(location.searchParams.get('error'), 'invalid_request');
      assert.match(String(location.searchParams.get('error_description')), /PKCE/);
    });

    test('the plain code_challenge_method is refused with invalid_request', async () => {
      const response = await fetchWithin(
        `${server.issuer}/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'openid', code_challenge: pkcePair().verifier, code_challenge_method: 'plain' })}`,
        { redirect: 'manual' },
      );
      const location = await locationOf(response);
      assert.equal(location.searchParams.get('error'), 'invalid_request');
    });

    test('an unregistered redirect_uri gets an error page, never a redirect', async () => {
      const response = await fetchWithin(
        `${server.issuer}/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.clientId, scope: 'openid', code_challenge: pkcePair().challenge, redirect_uri: 'https://attacker.example/cb' })}`,
        { redirect: 'manual' },
      );
      await expectStatus(response, 400);
      assert.equal(response.headers.get('location'), null);
      assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      assert.match(await response.text(), /redirect_uri/);
    });

    test('implicit and hybrid requests are unsupported_response_type', async () => {
      for (const responseType of ['token', 'id_token', 'code id_token', 'code token']) {
        const response = await fetchWithin(
          `${server.issuer}/authorize?${new URLSearchParams({ response_type: responseType, client_id: client.clientId, scope: 'openid', nonce: 'n', code_challenge: pkcePair().challenge })}`,
          { redirect: 'manual' },
        );
        const location = await locationOf(response);
        // Token-bearing response types default to the fragment response mode; the error goes there.
        assert.equal(
          new URLSearchParams(location.hash.slice(1)).get('error'),
          'unsupported_response_type',
          responseType,
        );
        assert.doesNotMatch(location.href, /access_token|id_token=|code=/, 'no credential in a URL');
      }
    });

    test('the password grant does not exist', async () => {
      const result = await tokenRequest(server, {
        grant_type: 'password',
        username: user.email,
        password: user.password,
        client_id: client.clientId,
        client_secret: client.clientSecret!,
      });
      expectStatus(result, 400);
      assert.equal(result.body.error, 'unsupported_grant_type');
    });

    test('a wrong client secret is 401 invalid_client with WWW-Authenticate, in the body or in Basic auth', async () => {
      const inBody = await tokenRequest(server, {
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: 'scs_wrong',
        scope: 'orders:read',
      });
      expectStatus(inBody, 401);
      assert.equal(inBody.body.error, 'invalid_client');
      assert.match(inBody.headers.get('www-authenticate') ?? '', /^Basic /);
      const basic = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: 'orders:read' },
        { basic: [client.clientId, 'scs_wrong'] },
      );
      expectStatus(basic, 401);
      assert.match(basic.headers.get('www-authenticate') ?? '', /^Basic .*error="invalid_client"/);
      assert.doesNotMatch(JSON.stringify(basic.body), /scs_wrong/, 'the presented secret is never echoed');
    });

    test('client credentials: <resource>/.default gives every scope the client has there, no refresh or ID token', async () => {
      const result = await tokenRequest(server, {
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.clientSecret!,
        scope: `${server.resource}/.default`,
      });
      expectStatus(result, 200);
      assert.equal(result.body.scope, 'orders:read orders:write');
      assert.equal(result.body.refresh_token, undefined);
      assert.equal(result.body.id_token, undefined);
      const access = jwtParts(result.body.access_token).payload;
      assert.equal(access.aud, server.resource);
      assert.equal(access.sub, client.clientId);
      const api = await fetchWithin(`${server.url}/api/orders`, {
        headers: { authorization: `Bearer ${String(result.body.access_token)}` },
      });
      await expectStatus(api, 200);
    });

    test('client credentials: explicit scopes and an RFC 8707 resource', async () => {
      const explicit = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: 'orders:read' },
        { basic: [client.clientId, client.clientSecret!] },
      );
      expectStatus(explicit, 200);
      assert.equal(explicit.body.scope, 'orders:read');
      const withResource = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: 'orders:write', resource: server.resource },
        { basic: [client.clientId, client.clientSecret!] },
      );
      expectStatus(withResource, 200);
      assert.equal(withResource.body.scope, 'orders:write');
      assert.equal(jwtParts(withResource.body.access_token).payload.aud, server.resource);
      const unknown = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: 'orders:read', resource: 'https://elsewhere.example/' },
        { basic: [client.clientId, client.clientSecret!] },
      );
      expectStatus(unknown, 400);
      assert.equal(unknown.body.error, 'invalid_target');
    });

    test('client credentials without a scope get the default: every scope the client has on the API (RFC 6749 §3.3)', async () => {
      const result = await tokenRequest(
        server,
        { grant_type: 'client_credentials' },
        { basic: [client.clientId, client.clientSecret!] },
      );
      expectStatus(result, 200);
      assert.equal(result.body.scope, 'orders:read orders:write');
      assert.equal(jwtParts(result.body.access_token).payload.scope, 'orders:read orders:write');
    });

    test('a client only gets the scopes it is registered for', async () => {
      const reader = await server.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['orders:read'],
      });
      const all = await tokenRequest(server, {
        grant_type: 'client_credentials',
        client_id: reader.clientId,
        client_secret: reader.clientSecret!,
        scope: `${server.resource}/.default`,
      });
      expectStatus(all, 200);
      assert.equal(all.body.scope, 'orders:read');
      const more = await tokenRequest(server, {
        grant_type: 'client_credentials',
        client_id: reader.clientId,
        client_secret: reader.clientSecret!,
        scope: 'orders:write',
      });
      expectStatus(more, 400);
      assert.equal(more.body.error, 'invalid_scope');
    });

    test('refresh rotates the token; presenting a rotated one revokes the whole family', async () => {
      const first = await exchangeCode(server, client, await authorizeWithLogin(server, client, user));
      expectStatus(first, 200);
      const second = await refresh(server, client, first.body.refresh_token);
      expectStatus(second, 200);
      assert.notEqual(second.body.refresh_token, first.body.refresh_token);
      assert.ok(second.body.access_token && second.body.id_token);
      const reuse = await refresh(server, client, first.body.refresh_token);
      assert.equal(reuse.body.error, 'invalid_grant', `${reuse.status}: ${reuse.text}`);
      const newest = await refresh(server, client, second.body.refresh_token);
      expectStatus(newest, 400, 'the family is revoked');
      assert.equal(newest.body.error, 'invalid_grant');
    });

    test('two concurrent refreshes with one token: at most one succeeds, never two token chains', async () => {
      const first = await exchangeCode(server, client, await authorizeWithLogin(server, client, user));
      expectStatus(first, 200);
      const results = await Promise.all([
        refresh(server, client, first.body.refresh_token),
        refresh(server, client, first.body.refresh_token),
      ]);
      const winners = results.filter((r) => r.status === 200);
      assert.ok(winners.length <= 1, JSON.stringify(results.map((r) => r.body)));
      for (const loser of results.filter((r) => r.status !== 200)) assert.equal(loser.body.error, 'invalid_grant');
      // The loser counts as a reuse (RFC 9700 §4.14.2): the winner's new token is revoked with the family.
      for (const winner of winners) expectStatus(await refresh(server, client, winner.body.refresh_token), 400);
    });

    test('consent is remembered per client: a second authorization with the same session skips both pages', async () => {
      const jar = new CookieJar();
      const first = await authorizeWithLogin(server, client, user, {}, { jar });
      assert.equal(first.flow.pages.length, 2, 'login and consent');
      const second = await authorizeWithLogin(server, client, user, {}, { jar });
      assert.equal(second.flow.pages.length, 0);
      expectStatus(await exchangeCode(server, client, second), 200);
    });

    test('a first-party client skips consent', async () => {
      const firstParty = await server.createClient({ firstParty: true, redirectUris: ['http://127.0.0.1:9/first'] });
      const flow = await authorizeWithLogin(server, firstParty, user);
      assert.equal(flow.flow.pages.length, 1, 'the login page only');
      const tokens = await exchangeCode(server, firstParty, flow);
      expectStatus(tokens, 200);
      assert.equal(jwtParts(tokens.body.access_token).payload.scope, 'openid profile email orders:read orders:write');
    });

    test('the token endpoint answers CORS only for the origins registered for the client', async () => {
      const spa = await server.createClient({
        type: 'public',
        grantTypes: ['authorization_code'],
        redirectUris: ['http://127.0.0.1:9/spa2'],
        corsOrigins: ['https://app.example'],
      });
      const flow = await authorizeWithLogin(server, spa, user);
      const allowed = await tokenRequest(
        server,
        { code: flow.code, code_verifier: flow.verifier, client_id: spa.clientId },
        { headers: { origin: 'https://app.example' } },
      );
      expectStatus(allowed, 200);
      assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example');
      const other = await authorizeWithLogin(server, spa, user);
      const refused = await tokenRequest(
        server,
        { code: other.code, code_verifier: other.verifier, client_id: spa.clientId },
        { headers: { origin: 'https://evil.example' } },
      );
      assert.equal(refused.headers.get('access-control-allow-origin'), null);
    });

    test('discovery and RFC 8414 metadata describe the contract paths', async () => {
      const discovery = (await expectJson(
        await fetchWithin(`${server.issuer}/.well-known/openid-configuration`),
      )) as Record<string, unknown>;
      assert.equal(discovery.issuer, server.issuer);
      assert.equal(discovery.authorization_endpoint, `${server.issuer}/authorize`);
      assert.equal(discovery.token_endpoint, `${server.issuer}/token`);
      assert.deepEqual(discovery.code_challenge_methods_supported, ['S256']);
      assert.deepEqual(discovery.response_types_supported, ['code']);
      assert.deepEqual(discovery.grant_types_supported, ['authorization_code', 'refresh_token', 'client_credentials']);
      assert.equal(
        discovery.dpop_signing_alg_values_supported,
        undefined,
        'the API does not enforce DPoP, so it is not offered',
      );
      assert.equal(discovery.pushed_authorization_request_endpoint, undefined);
      const rfc8414 = (await expectJson(
        await fetchWithin(`${server.url}/.well-known/oauth-authorization-server/oauth`),
      )) as Record<string, unknown>;
      assert.equal(rfc8414.issuer, server.issuer);
    });

    test('RFC 9728 protected resource metadata, referenced from the API 401', async () => {
      const unauthenticated = await fetchWithin(`${server.url}/api/orders`);
      await expectStatus(unauthenticated, 401);
      const url = /resource_metadata="([^"]+)"/.exec(unauthenticated.headers.get('www-authenticate') ?? '')?.[1];
      assert.ok(url);
      const metadata = (await expectJson(await fetchWithin(url))) as Record<string, unknown>;
      assert.equal(metadata.resource, server.resource);
      assert.deepEqual(metadata.authorization_servers, [server.issuer]);
      assert.deepEqual(metadata.scopes_supported, [
        'orders:read',
        'orders:write',
        'events:read',
        'webhooks:manage',
        'admin:read',
        'admin:write',
      ]);
      const bare = (await expectJson(
        await fetchWithin(`${server.url}/.well-known/oauth-protected-resource`),
      )) as Record<string, unknown>;
      assert.deepEqual(bare, metadata);
    });
  });
}
