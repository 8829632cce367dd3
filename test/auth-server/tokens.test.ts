// Tokens from the real authorization server at the real API: what must be refused, and how keys
// survive restarts and rotation.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { base64url } from 'jose';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome } from '../helpers/deadline.ts';
import { expectStatus } from '../helpers/expect.ts';
import { CALL_TIMEOUT_MS } from '../helpers/http.ts';
import { authorizeWithLogin, exchangeCode, jwtParts, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;

function forge(header: Record<string, unknown>, payload: Record<string, unknown>, signature = ''): string {
  return `${base64url.encode(JSON.stringify(header))}.${base64url.encode(JSON.stringify(payload))}.${signature}`;
}

async function apiStatus(server: AuthTestServer, token: string): Promise<{ status: number; challenge: string | null }> {
  const response = await fetch(`${server.url}/api/orders`, {
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  return { status: response.status, challenge: response.headers.get('www-authenticate') };
}

/** The issuer's published keys; a failure shows the status and body. */
async function publishedKeys(server: AuthTestServer): Promise<{ kid: string; d?: string }[]> {
  const response = await fetch(`${server.issuer}/jwks`, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  await expectStatus(response, 200, 'GET jwks');
  return ((await response.json()) as { keys: { kid: string; d?: string }[] }).keys;
}

for (const dialect of testDialects()) {
  describe(`access tokens at the API [${dialect}]`, () => {
    let server: AuthTestServer;
    let client: Awaited<ReturnType<AuthTestServer['createClient']>>;
    let accessToken: string;
    before(async () => {
      server = await startAuthServer(dialect);
      client = await server.createClient();
      const result = await tokenRequest(server, {
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.clientSecret!,
        scope: `${server.resource}/.default`,
      });
      accessToken = tokenFrom(result, 'access_token', 'client_credentials');
    });
    after(() => server.close());

    test('the genuine token is accepted', async () => {
      const genuine = await apiStatus(server, accessToken);
      assert.equal(genuine.status, 200, `WWW-Authenticate: ${genuine.challenge}`);
    });

    test('alg=none, HS256 signed with the public key, unknown kid and a tampered payload are 401', async () => {
      const { header, payload } = jwtParts(accessToken);
      const publicKey = JSON.stringify((await publishedKeys(server)).find((k) => k.kid === header.kid));
      const hsHeader = { ...header, alg: 'HS256' };
      const hsInput = `${base64url.encode(JSON.stringify(hsHeader))}.${base64url.encode(JSON.stringify(payload))}`;
      const [h, , s] = accessToken.split('.');
      const cases = {
        none: forge({ ...header, alg: 'none' }, payload),
        hs256: `${hsInput}.${createHmac('sha256', publicKey).update(hsInput).digest('base64url')}`,
        unknownKid: forge({ ...header, kid: 'not-a-key' }, payload, s),
        tampered: `${h}.${base64url.encode(JSON.stringify({ ...payload, scope: 'orders:read orders:write admin' }))}.${s}`,
      };
      for (const [name, token] of Object.entries(cases)) {
        const result = await apiStatus(server, token);
        assert.equal(result.status, 401, name);
        assert.match(result.challenge ?? '', /error="invalid_token"/, name);
      }
    });

    test('a token for another audience or from another issuer is 401', async () => {
      // Each claim alone, in a token signed by the server's own trusted key: the control proves the
      // re-signed token is accepted as it is, so a 401 is the claim's doing and not the signature's.
      const { header, payload } = jwtParts(accessToken);
      const { SignJWT, importJWK } = await import('jose');
      const jwk = server.app.authServer!.keys.jwks.keys.find((k) => k.kid === header.kid)!;
      const resign = async (claims: Record<string, unknown>) =>
        new SignJWT({ ...payload, ...claims })
          .setProtectedHeader(header as { alg: string })
          .sign(await importJWK(jwk, String(header.alg)));
      const control = await apiStatus(server, await resign({}));
      assert.equal(control.status, 200, `the re-signed genuine token: ${control.challenge}`);
      assert.notEqual(payload.aud, 'https://other-api.example/api');
      assert.notEqual(payload.iss, 'https://other-issuer.example');
      for (const [name, claims] of Object.entries({
        'wrong aud': { aud: 'https://other-api.example/api' },
        'wrong iss': { iss: 'https://other-issuer.example' },
      })) {
        const result = await apiStatus(server, await resign(claims));
        assert.equal(result.status, 401, `${name}: ${result.challenge}`);
        assert.match(result.challenge ?? '', /error="invalid_token"/, name);
      }

      // And a token another authorization server issued: wrong iss and aud, under a key this one does not know.
      const other = await startAuthServer(dialect);
      try {
        const foreignClient = await other.createClient({ grantTypes: ['client_credentials'], redirectUris: [] });
        const foreign = await tokenRequest(other, {
          grant_type: 'client_credentials',
          client_id: foreignClient.clientId,
          client_secret: foreignClient.clientSecret!,
          scope: `${other.resource}/.default`,
        });
        const result = await apiStatus(server, tokenFrom(foreign, 'access_token', 'the other server'));
        assert.equal(result.status, 401, 'wrong iss and aud, unknown key');
      } finally {
        await other.close();
      }
    });

    test('an ID token presented as an access token is 401 (typ is not at+jwt)', async () => {
      const user = await server.createUser();
      const tokens = await exchangeCode(server, client, await authorizeWithLogin(server, client, user));
      const result = await apiStatus(server, tokenFrom(tokens, 'id_token', 'code exchange'));
      assert.equal(result.status, 401, `WWW-Authenticate: ${result.challenge}`);
    });

    test('an expired token is 401', async () => {
      // Signed by the real keys (the server's own key set), only with exp in the past.
      const { header, payload } = jwtParts(accessToken);
      const { SignJWT, importJWK } = await import('jose');
      const jwk = server.app.authServer!.keys.jwks.keys.find((k) => k.kid === header.kid)!;
      const expired = await new SignJWT({ ...payload, iat: 1_700_000_000, exp: 1_700_000_900 })
        .setProtectedHeader(header as { alg: string })
        .sign(await importJWK(jwk, String(header.alg)));
      const result = await apiStatus(server, expired);
      assert.equal(result.status, 401, `WWW-Authenticate: ${result.challenge}`);
      assert.match(result.challenge ?? '', /expired/);
    });
  });

  describe(`signing keys [${dialect}]`, () => {
    let server: AuthTestServer;
    before(async () => {
      server = await startAuthServer(dialect);
    });
    after(() => server.close());

    test('keys persist across restarts; `signet keys rotate` brings new keys without invalidating issued tokens', async () => {
      const client = await server.createClient({ grantTypes: ['client_credentials'], redirectUris: [] });
      const issue = async (s: AuthTestServer) =>
        tokenFrom(
          await tokenRequest(s, {
            grant_type: 'client_credentials',
            client_id: client.clientId,
            client_secret: client.clientSecret!,
          }),
        );
      const before = await issue(server);
      const oldKid = jwtParts(before).header.kid;

      await server.stop();
      server = await startAuthServer(
        dialect,
        {},
        { databaseUrl: server.databaseUrl, port: new URL(server.url).port as unknown as number },
      );
      assert.equal((await apiStatus(server, before)).status, 200, 'a restart keeps the keys');

      const rotate = spawnSync(process.execPath, [BIN, 'keys', 'rotate', '--json'], {
        // No delay: the new keys sign as soon as the server loads them (test/auth-server/key-rotation.test.ts has the delay).
        env: { ...process.env, DATABASE_URL: server.databaseUrl, LOG_LEVEL: 'silent', KEY_ROTATION_DELAY: '0' },
        encoding: 'utf8',
        timeout: COMMAND_TIMEOUT_MS,
      });
      assert.equal(rotate.status, 0, outcome(rotate));
      const { kids } = JSON.parse(rotate.stdout) as { kids: string[] };
      assert.equal(await server.app.authServer!.reloadIfChanged(), true, 'the running server picks up the rotation');

      const after = await issue(server);
      const newKid = jwtParts(after).header.kid;
      assert.notEqual(newKid, oldKid);
      assert.ok(kids.includes(String(newKid)));
      const published = await publishedKeys(server);
      assert.ok(
        published.some((k) => k.kid === oldKid) && published.some((k) => k.kid === newKid),
        'old and new keys are both published',
      );
      assert.ok(
        published.every((k) => k.d === undefined),
        'never a private part',
      );
      assert.equal((await apiStatus(server, before)).status, 200, 'a token signed before the rotation still works');
      const signedAfter = await apiStatus(server, after);
      assert.equal(signedAfter.status, 200, `a token signed after the rotation: ${signedAfter.challenge}`);
    });

    test('with KEY_ENCRYPTION_KEY the keys are stored encrypted, and the wrong key refuses to start', async () => {
      const kek = Buffer.alloc(32, 7).toString('base64url');
      const sealed = await startAuthServer(dialect, { KEY_ENCRYPTION_KEY: kek });
      try {
        const rows = await sealed.app.database.db.selectFrom('signing_keys').select('material').execute();
        assert.ok(rows.length >= 3 && rows.every((r) => r.material.startsWith('aes256gcm:')));
        await sealed.stop();
        await assert.rejects(
          startAuthServer(
            dialect,
            { KEY_ENCRYPTION_KEY: Buffer.alloc(32, 8).toString('base64url') },
            { databaseUrl: sealed.databaseUrl, port: 0 },
          ),
          /KEY_ENCRYPTION_KEY/,
        );
      } finally {
        await sealed.close();
      }
    });
  });
}
