// Dynamic client registration (RFC 7591) and management (RFC 7592), docs/guides/admin-api.md:
// with DYNAMIC_REGISTRATION=true, openid-client registers a client with an initial access token an admin
// issued, and signs a user in with it; the client is an ordinary oauth_clients row with a hashed secret,
// bound by the same rules and by the token's scopes. Without a token: refused. Off: no endpoint at all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { hashClientSecret } from '../../src/auth-server/clients/clients.repository.ts';
import { INSECURE } from '../helpers/openid-client.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, fetchWithin } from '../helpers/http.ts';
import { runAuthorizationFlow } from '../helpers/oauth-flow.ts';
import { tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';

async function adminToken(server: AuthTestServer): Promise<string> {
  const ops = await server.createClient({ scopes: ['admin:read', 'admin:write'], grantTypes: ['client_credentials'] });
  const issued = await tokenRequest(server, {
    grant_type: 'client_credentials',
    scope: 'admin:read admin:write',
    client_id: ops.clientId,
    client_secret: ops.clientSecret!,
  });
  return tokenFrom(issued, 'access_token', 'the admin client’s token');
}

async function registrationToken(server: AuthTestServer, admin: string, scope: string): Promise<string> {
  const res = await call(server.url, 'POST', '/api/admin/registration-tokens', {
    token: admin,
    body: { scope, expires_in: 3600 },
  });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.json.registration_endpoint, `${server.issuer}/reg`, res.text);
  return res.json.registration_token as string;
}

async function register(server: AuthTestServer, token: string | undefined, metadata: Record<string, unknown>) {
  const response = await fetchWithin(`${server.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(metadata),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text || '{}') as Record<string, unknown> };
}

for (const dialect of testDialects()) {
  describe(`dynamic client registration on [${dialect}]`, () => {
    let server: AuthTestServer;
    let admin: string;
    before(async () => {
      server = await startAuthServer(dialect, { DYNAMIC_REGISTRATION: 'true' });
      admin = await adminToken(server);
    });
    after(() => server.close());

    test('discovery names the registration endpoint', async () => {
      const res = await call(server.url, 'GET', '/oauth/.well-known/openid-configuration');
      assert.equal(res.json.registration_endpoint, `${server.issuer}/reg`, res.text);
    });

    test('openid-client registers a client with an initial access token, then signs a user in with it', async () => {
      const initialAccessToken = await registrationToken(server, admin, 'orders:read');
      const rp = await client.dynamicClientRegistration(
        new URL(server.issuer),
        {
          client_name: 'Registered app',
          redirect_uris: [REDIRECT],
          grant_types: ['authorization_code', 'refresh_token'],
          token_endpoint_auth_method: 'client_secret_basic',
          scope: 'openid profile orders:read',
        },
        undefined,
        { initialAccessToken, ...INSECURE },
      );
      const metadata = rp.clientMetadata();
      assert.match(metadata.client_id, /^cl_[0-9a-f]{32}$/);
      assert.match(String(metadata.client_secret), /^scs_/);
      // Stored like any client: the secret only as its hash, the rules as the CLI applies them.
      const row = await server.app.database.db
        .selectFrom('oauth_clients')
        .selectAll()
        .where('id', '=', metadata.client_id)
        .executeTakeFirstOrThrow();
      assert.equal(row.secret_hash, hashClientSecret(String(metadata.client_secret)));
      assert.equal(row.name, 'Registered app');
      const audit = await server.app.database.db
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', 'client.registered')
        .where('target_id', '=', metadata.client_id)
        .execute();
      assert.equal(audit.length, 1, 'client.registered is audited');
      assert.ok(!JSON.stringify(audit).includes(String(metadata.client_secret)), 'no secret in the trail');

      const user = await server.createUser();
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(rp, {
        scope: 'openid orders:read',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        redirect_uri: REDIRECT,
      });
      const { callback } = await runAuthorizationFlow({
        base: server.url,
        authorizeQuery: url.search.slice(1),
        email: user.email,
        password: user.password,
      });
      const tokens = await client.authorizationCodeGrant(rp, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        idTokenExpected: true,
      });
      assert.equal(tokens.claims()?.sub, user.id);
      assert.match(String(decodeJwt(tokens.access_token).scope), /orders:read/);
      const orders = await call(server.url, 'GET', '/api/orders', { token: tokens.access_token });
      assert.equal(orders.status, 200, orders.text);
    });

    test('without an initial access token, or with a wrong one, registration is refused', async () => {
      const metadata = { redirect_uris: [REDIRECT], client_name: 'X' };
      for (const token of [undefined, 'not-a-token']) {
        const res = await register(server, token, metadata);
        assert.equal(res.status, 401, res.text);
        assert.equal(res.json.error, 'invalid_token', res.text);
      }
    });

    test('a registration obeys the client rules and the scopes the token allows', async () => {
      const token = await registrationToken(server, admin, 'orders:read');
      const cases: [Record<string, unknown>, string, RegExp][] = [
        [{ redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri', /https/],
        [{ redirect_uris: [REDIRECT], scope: 'orders:write' }, 'invalid_client_metadata', /orders:write/],
        [{ redirect_uris: [REDIRECT], first_party: true }, 'invalid_client_metadata', /first_party/],
        [
          { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['client_credentials'] },
          'invalid_client_metadata',
          /client_credentials/,
        ],
      ];
      for (const [metadata, error, description] of cases) {
        const res = await register(server, token, metadata);
        assert.equal(res.status, 400, `${JSON.stringify(metadata)}: ${res.text}`);
        assert.equal(res.json.error, error, res.text);
        assert.match(String(res.json.error_description), description, res.text);
      }
      const count = await server.app.database.db
        .selectFrom('oauth_clients')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('name', '=', 'X')
        .executeTakeFirstOrThrow();
      assert.equal(Number(count.n), 0);
    });

    test('RFC 7592: the client reads and deletes itself with its registration access token', async () => {
      const token = await registrationToken(server, admin, '');
      const created = await register(server, token, { redirect_uris: [REDIRECT], client_name: 'Self-managed' });
      assert.equal(created.status, 201, created.text);
      const uri = String(created.json.registration_client_uri);
      const headers = { authorization: `Bearer ${created.json.registration_access_token}` };
      const read = await fetchWithin(uri, { headers });
      assert.equal(read.status, 200, await read.clone().text());
      assert.equal(((await read.json()) as { client_name: string }).client_name, 'Self-managed');
      const update = (body: Record<string, unknown>, token: string) =>
        fetchWithin(uri, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: created.json.client_id, ...body }),
        });
      const refused = await update(
        { redirect_uris: [REDIRECT], scope: 'orders:read' },
        String(headers.authorization).slice(7),
      );
      assert.equal(refused.status, 400, await refused.clone().text());
      const renamed = await update(
        { redirect_uris: [REDIRECT], client_name: 'Renamed' },
        String(headers.authorization).slice(7),
      );
      const renamedBody = (await renamed.json()) as Record<string, unknown>;
      assert.equal(renamed.status, 200, JSON.stringify(renamedBody));
      const row = await server.app.database.db
        .selectFrom('oauth_clients')
        .select('name')
        .where('id', '=', String(created.json.client_id))
        .executeTakeFirstOrThrow();
      assert.equal(row.name, 'Renamed', 'an RFC 7592 update lands in oauth_clients');
      // The registration access token is rotated on update (RFC 7592 §2.2).
      headers.authorization = `Bearer ${String(renamedBody.registration_access_token)}`;
      const removed = await fetchWithin(uri, { method: 'DELETE', headers });
      assert.equal(removed.status, 204, await removed.text());
      const gone = await server.app.database.db
        .selectFrom('oauth_clients')
        .select('id')
        .where('id', '=', String(created.json.client_id))
        .executeTakeFirst();
      assert.equal(gone, undefined, 'deleted from oauth_clients');
    });

    test('the initial access token is stored only as its hash', async () => {
      const token = await registrationToken(server, admin, 'orders:read');
      const rows = await server.app.database.db.selectFrom('registration_tokens').selectAll().execute();
      assert.ok(rows.length > 0);
      assert.ok(!JSON.stringify(rows).includes(token), 'the token value is not in the table');
    });
  });

  describe(`dynamic client registration off (the default) [${dialect}]`, () => {
    let server: AuthTestServer;
    let admin: string;
    before(async () => {
      server = await startAuthServer(dialect);
      admin = await adminToken(server);
    });
    after(() => server.close());

    test('the registration endpoint does not exist and discovery does not name one', async () => {
      const res = await register(server, 'anything', { redirect_uris: [REDIRECT] });
      assert.equal(res.status, 404, res.text);
      const discovery = await call(server.url, 'GET', '/oauth/.well-known/openid-configuration');
      assert.equal(discovery.status, 200);
      assert.equal(discovery.json.registration_endpoint, undefined, discovery.text);
    });

    test('the admin API issues no registration token', async () => {
      const res = await call(server.url, 'POST', '/api/admin/registration-tokens', { token: admin, body: {} });
      assert.equal(res.status, 404, res.text);
      assert.match(res.json.detail, /DYNAMIC_REGISTRATION/);
    });
  });
}
