// RFC 7662 introspection of Signet's own JWT access tokens (RFC 9068), through oauth4webapi 3 as a
// resource server or client would call it: active with its claims while the token is valid and its grant
// stands; inactive once expired, forged or altered, or when its grant was revoked (RFC 7009 revocation
// of the refresh token, refresh-token reuse, authorization code replay); and inactive, revealing nothing,
// for a caller that is neither the token's client nor a registered resource server (RFC 7662 §2.2).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import * as oauth from 'oauth4webapi';
import { loadKeys } from '../../src/auth-server/tokens/keys.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome } from '../helpers/deadline.ts';
import { fetchWithin } from '../helpers/http.ts';
import {
  authorizeWithLogin,
  exchangeCode,
  jwtParts,
  refresh,
  tokenFrom,
  tokenRequest,
} from '../helpers/oauth-requests.ts';

type TestClient = Awaited<ReturnType<AuthTestServer['createClient']>>;

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;

function signet(server: AuthTestServer, args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, DATABASE_URL: server.databaseUrl, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
    timeout: COMMAND_TIMEOUT_MS,
  });
}
type TestUser = Awaited<ReturnType<AuthTestServer['createUser']>>;

/** The test server speaks plain HTTP on 127.0.0.1; oauth4webapi refuses that unless told. */
const INSECURE = { [oauth.allowInsecureRequests]: true };

async function discover(server: AuthTestServer): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(server.issuer);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, INSECURE));
}

/** oauth4webapi's introspection with client_secret_basic; its own validation of the answer included. */
async function introspect(
  as: oauth.AuthorizationServer,
  caller: TestClient,
  token: string,
): Promise<oauth.IntrospectionResponse> {
  const client: oauth.Client = { client_id: caller.clientId };
  const response = await oauth.introspectionRequest(
    as,
    client,
    oauth.ClientSecretBasic(caller.clientSecret!),
    token,
    INSECURE,
  );
  const copy = response.clone();
  try {
    return await oauth.processIntrospectionResponse(as, client, response);
  } catch (err) {
    throw new Error(`introspection answered ${copy.status}: ${await copy.text()}`, { cause: err });
  }
}

/** The token re-signed with the issuer's own private key after `change` altered its claims. */
async function resignedWithOurKey(
  server: AuthTestServer,
  token: string,
  change: (payload: Record<string, unknown>) => void,
): Promise<string> {
  const { header, payload } = jwtParts(token);
  const keys = await loadKeys(server.app.database.db, undefined, 3600_000);
  const jwk = keys.jwks.keys.find((k) => k.kid === header.kid) as JWK | undefined;
  assert.ok(jwk, `no stored key with kid ${String(header.kid)}`);
  change(payload);
  return new SignJWT(payload)
    .setProtectedHeader(header as { alg: string })
    .sign(await importJWK(jwk, header.alg as string));
}

for (const dialect of testDialects()) {
  describe(`introspection of JWT access tokens [${dialect}]`, () => {
    let server: AuthTestServer;
    let as: oauth.AuthorizationServer;
    let user: TestUser;
    let app: TestClient;

    /** A fresh code flow: its access token (a JWT for the orders API) and refresh token. */
    async function signIn(client: TestClient = app): Promise<{ accessToken: string; refreshToken: string }> {
      const result = await exchangeCode(server, client, await authorizeWithLogin(server, client, user));
      return { accessToken: tokenFrom(result), refreshToken: tokenFrom(result, 'refresh_token') };
    }

    before(async () => {
      server = await startAuthServer(dialect);
      as = await discover(server);
      user = await server.createUser();
      app = await server.createClient();
    });
    after(() => server.close());

    test('a valid access token from the code flow is active with scope, client_id, sub, aud, iss, exp, iat and token_type', async () => {
      const { accessToken } = await signIn();
      const { payload } = jwtParts(accessToken);
      const answer = await introspect(as, app, accessToken);
      assert.equal(answer.active, true, JSON.stringify(answer));
      assert.deepEqual(
        {
          scope: answer.scope,
          client_id: answer.client_id,
          sub: answer.sub,
          aud: answer.aud,
          iss: answer.iss,
          exp: answer.exp,
          iat: answer.iat,
          token_type: answer.token_type,
        },
        {
          scope: payload.scope,
          client_id: app.clientId,
          sub: user.id,
          aud: server.resource,
          iss: server.issuer,
          exp: payload.exp,
          iat: payload.iat,
          token_type: 'Bearer',
        },
      );
      assert.ok(String(answer.scope).split(' ').includes('orders:read'), JSON.stringify(answer));
    });

    test('a client-credentials access token is active, its sub the client itself', async () => {
      const accessToken = tokenFrom(
        await tokenRequest(server, {
          grant_type: 'client_credentials',
          client_id: app.clientId,
          client_secret: app.clientSecret!,
          scope: 'orders:read',
        }),
      );
      const answer = await introspect(as, app, accessToken);
      assert.equal(answer.active, true, JSON.stringify(answer));
      assert.equal(answer.sub, app.clientId);
      assert.equal(answer.scope, 'orders:read');
      assert.equal(answer.token_type, 'Bearer');
    });

    test('refresh tokens are still introspected by oidc-provider', async () => {
      const { refreshToken } = await signIn();
      const answer = await introspect(as, app, refreshToken);
      assert.equal(answer.active, true, JSON.stringify(answer));
      assert.equal(answer.client_id, app.clientId);
    });

    test('a client registered as a resource server may introspect tokens of other clients', async () => {
      const resourceServer = await server.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        resourceServer: true,
      });
      const { accessToken } = await signIn();
      const answer = await introspect(as, resourceServer, accessToken);
      assert.equal(answer.active, true, JSON.stringify(answer));
      assert.equal(answer.client_id, app.clientId);
      assert.equal(answer.sub, user.id);
    });

    test('`signet client create --resource-server` registers a resource server; a public one is refused', async () => {
      const base = [
        'client',
        'create',
        '--name',
        'orders-api',
        '--grant',
        'client_credentials',
        '--scope',
        'orders:read',
        '--json',
      ];
      const created = signet(server, [...base, '--type', 'confidential', '--resource-server']);
      assert.equal(created.status, 0, outcome(created));
      const json = JSON.parse(created.stdout) as { client_id: string; client_secret: string; resource_server: boolean };
      assert.equal(json.resource_server, true, created.stdout);
      const { accessToken } = await signIn();
      const answer = await introspect(
        as,
        { clientId: json.client_id, clientSecret: json.client_secret } as TestClient,
        accessToken,
      );
      assert.equal(answer.active, true, JSON.stringify(answer));

      const refused = signet(server, [...base, '--type', 'public', '--resource-server']);
      assert.equal(refused.status, 2, outcome(refused));
      assert.match(refused.stderr, /--resource-server needs a confidential client \(--type confidential\)/);
    });

    test('a client that is neither the token’s client nor a resource server gets active false', async () => {
      const other = await server.createClient();
      const { accessToken } = await signIn();
      assert.deepEqual(await introspect(as, other, accessToken), { active: false });
      assert.equal((await introspect(as, app, accessToken)).active, true, 'the token itself is active');
    });

    test('a caller with a wrong secret is 401 invalid_client, whatever the token', async () => {
      const { accessToken } = await signIn();
      const response = await fetchWithin(`${server.issuer}/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: app.clientId, client_secret: 'wrong', token: accessToken }).toString(),
      });
      const text = await response.text();
      assert.equal(response.status, 401, text);
      assert.equal((JSON.parse(text) as { error?: string }).error, 'invalid_client', text);
    });

    test('an expired token is inactive (the same token re-signed by us with a later exp is active)', async () => {
      const { accessToken } = await signIn();
      const now = Math.floor(Date.now() / 1000);
      const stillValid = await resignedWithOurKey(server, accessToken, (p) => {
        p.exp = now + 120;
      });
      assert.equal((await introspect(as, app, stillValid)).active, true, 're-signing alone changes nothing');
      const expired = await resignedWithOurKey(server, accessToken, (p) => {
        p.iat = now - 3600;
        p.exp = now - 60;
      });
      assert.deepEqual(await introspect(as, app, expired), { active: false });
    });

    test('a token signed by another key, or altered after signing, is inactive', async () => {
      const { accessToken } = await signIn();
      const { header, payload } = jwtParts(accessToken);
      const { privateKey } = await generateKeyPair(header.alg as string);
      const forged = await new SignJWT(payload).setProtectedHeader(header as { alg: string }).sign(privateKey);
      assert.deepEqual(await introspect(as, app, forged), { active: false });

      const [h, , s] = accessToken.split('.');
      const widened = Buffer.from(JSON.stringify({ ...payload, scope: `${String(payload.scope)} admin` })).toString(
        'base64url',
      );
      assert.deepEqual(await introspect(as, app, `${h}.${widened}.${s}`), { active: false });
      assert.equal((await introspect(as, app, accessToken)).active, true, 'the genuine token is active');
    });

    test('revoking the refresh token (RFC 7009) makes the access token of its grant inactive', async () => {
      const { accessToken, refreshToken } = await signIn();
      assert.equal((await introspect(as, app, accessToken)).active, true);
      const client: oauth.Client = { client_id: app.clientId };
      const revocation = await oauth.revocationRequest(
        as,
        client,
        oauth.ClientSecretBasic(app.clientSecret!),
        refreshToken,
        INSECURE,
      );
      await oauth.processRevocationResponse(revocation);
      assert.deepEqual(await introspect(as, app, accessToken), { active: false });
    });

    test('reusing a rotated refresh token makes every access token of the family inactive', async () => {
      const { accessToken: first, refreshToken } = await signIn();
      const rotated = await refresh(server, app, refreshToken);
      const second = tokenFrom(rotated, 'access_token', 'refresh');
      assert.equal((await introspect(as, app, second)).active, true);

      const reuse = await refresh(server, app, refreshToken);
      assert.equal(reuse.status, 400, reuse.text);
      assert.equal(reuse.body.error, 'invalid_grant', reuse.text);
      assert.deepEqual(await introspect(as, app, first), { active: false });
      assert.deepEqual(await introspect(as, app, second), { active: false });
    });

    test('replaying an authorization code makes the access token it issued inactive', async () => {
      const code = await authorizeWithLogin(server, app, user);
      const accessToken = tokenFrom(await exchangeCode(server, app, code));
      assert.equal((await introspect(as, app, accessToken)).active, true);

      const replay = await exchangeCode(server, app, code);
      assert.equal(replay.status, 400, replay.text);
      assert.equal(replay.body.error, 'invalid_grant', replay.text);
      assert.deepEqual(await introspect(as, app, accessToken), { active: false });
    });
  });
}
