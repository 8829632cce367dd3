// The registration policy (REGISTRATION_SCOPES, REGISTRATION_GRANT_TYPES, REGISTRATION_REDIRECT_HOSTS;
// docs/security.md, "Registration") refuses what a self-registered client may not have with RFC 7591 §3.2.2's
// errors; redirect URIs are held to RFC 3986 (no user information, no character outside §2) and stored
// normalised (§6.2.2), through dynamic registration and the admin API alike.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call, fetchWithin } from '../helpers/http.ts';
import { tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

async function adminToken(server: AuthTestServer): Promise<string> {
  const ops = await server.createClient({ scopes: ['admin:read', 'admin:write'], grantTypes: ['client_credentials'] });
  return tokenFrom(
    await tokenRequest(server, {
      grant_type: 'client_credentials',
      scope: 'admin:read admin:write',
      client_id: ops.clientId,
      client_secret: ops.clientSecret!,
    }),
  );
}

async function register(server: AuthTestServer, token: string, metadata: Record<string, unknown>) {
  const response = await fetchWithin(`${server.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(metadata),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text || '{}') as Record<string, unknown> };
}

/** Redirect URIs refused whoever registers them, and the words of the refusal. */
const BAD_URIS: [string, RegExp][] = [
  ['https://user:pw@app.example.com/cb', /user information/],
  ['https://user@app.example.com/cb', /user information/],
  ['https://app.example.com/cb<script>', /RFC 3986/],
  ['https://app.example.com/call back', /RFC 3986/],
  ['https://app.example.com/caf\u00e9', /RFC 3986/],
  ['https://app.example.com/cb?q="x"', /RFC 3986/],
  ['https://app.example.com/{cb}', /RFC 3986/],
  ['https://app.example.com/a|b', /RFC 3986/],
  ['https://app.example.com/a\\b', /RFC 3986/],
  ['https://app.example.com/a^b', /RFC 3986/],
  ['https://app.example.com/a`b', /RFC 3986/],
  ['https://app.example.com/a%zzb', /percent-encoding/],
];

/** As sent → as stored and answered (RFC 3986 §6.2.2). */
const NORMALISED: [string, string][] = [
  ['HTTPS://App.Example.COM:443/a/./b/../cb?x=%7e&y=%2f', 'https://app.example.com/a/cb?x=~&y=%2F'],
  ['https://app.example.com', 'https://app.example.com/'],
  ['http://127.0.0.1:8080/%63allback', 'http://127.0.0.1:8080/callback'],
];

for (const dialect of testDialects()) {
  describe(`registration policy and redirect URI rules [${dialect}]`, () => {
    let server: AuthTestServer;
    let admin: string;
    before(async () => {
      server = await startAuthServer(dialect, {
        DYNAMIC_REGISTRATION: 'true',
        REGISTRATION_SCOPES: 'orders:read',
        REGISTRATION_REDIRECT_HOSTS: 'app.example.com,*.apps.example.net,127.0.0.1',
      });
      admin = await adminToken(server);
    });
    after(() => server.close());

    async function registrationToken(scope = 'orders:read', maxUses = 50): Promise<string> {
      const res = await call(server.url, 'POST', '/api/admin/registration-tokens', {
        token: admin,
        body: { scope, max_uses: maxUses },
      });
      expectStatus(res, 201, 'issue a registration token');
      return String(res.json.registration_token);
    }

    test('a token may allow only the scopes of the policy: another API scope is a 422', async () => {
      const res = await call(server.url, 'POST', '/api/admin/registration-tokens', {
        token: admin,
        body: { scope: 'orders:write' },
      });
      const problem = expectProblem(res, 422, 'validation-error');
      assert.match(String(problem.detail), /REGISTRATION_SCOPES/, res.text);
    });

    test('the policy refuses scopes, grant types and redirect hosts it does not allow (RFC 7591 §3.2.2)', async () => {
      const token = await registrationToken();
      const good = { redirect_uris: ['https://app.example.com/cb'], client_name: 'Policy' };
      const cases: [Record<string, unknown>, string, RegExp][] = [
        [
          { ...good, scope: 'orders:write' },
          'invalid_client_metadata',
          /registration policy does not allow the scope orders:write/,
        ],
        [{ ...good, scope: 'webhooks:manage' }, 'invalid_client_metadata', /registration policy/],
        [{ ...good, scope: 'admin:read' }, 'invalid_client_metadata', /admin:read is never given/],
        [
          { ...good, grant_types: ['authorization_code', 'refresh_token', 'client_credentials'], scope: 'orders:read' },
          'invalid_client_metadata',
          /grant type client_credentials/,
        ],
        [{ ...good, redirect_uris: ['https://evil.example.org/cb'] }, 'invalid_redirect_uri', /evil\.example\.org/],
        [{ ...good, redirect_uris: ['https://apps.example.net/cb'] }, 'invalid_redirect_uri', /apps\.example\.net/],
        [{ ...good, redirect_uris: ['https://app.example.com.evil.org/cb'] }, 'invalid_redirect_uri', /evil/],
        [
          { ...good, post_logout_redirect_uris: ['https://evil.example.org/bye'] },
          'invalid_redirect_uri',
          /evil\.example\.org/,
        ],
      ];
      for (const [metadata, error, description] of cases) {
        const res = await register(server, token, metadata);
        assert.equal(res.status, 400, `${JSON.stringify(metadata)}: ${res.text}`);
        assert.equal(res.json.error, error, res.text);
        assert.match(String(res.json.error_description), description, res.text);
      }
      for (const uri of ['https://app.example.com/cb', 'https://shop.apps.example.net/cb', 'http://127.0.0.1:9/cb']) {
        const res = await register(server, token, { redirect_uris: [uri], scope: 'openid orders:read' });
        assert.equal(res.status, 201, `${uri}: ${res.text}`);
      }
    });

    test('redirect URIs with user information, <, spaces or characters outside RFC 3986 are refused', async () => {
      const token = await registrationToken();
      for (const [uri, why] of BAD_URIS) {
        const registered = await register(server, token, { redirect_uris: [uri] });
        assert.equal(registered.status, 400, `${uri}: ${registered.text}`);
        assert.equal(registered.json.error, 'invalid_redirect_uri', registered.text);
        assert.match(String(registered.json.error_description), why, registered.text);
        const created = await call(server.url, 'POST', '/api/admin/clients', {
          token: admin,
          body: {
            client_name: 'Bad URI',
            client_type: 'public',
            grant_types: ['authorization_code'],
            redirect_uris: [uri],
          },
        });
        const problem = expectProblem(created, 422, 'validation-error', uri);
        assert.deepEqual(
          (problem.errors as { pointer: string }[]).map((e) => e.pointer),
          ['/redirect_uris/0'],
          created.text,
        );
      }
      const stored = await server.app.database.db
        .selectFrom('oauth_clients')
        .select('id')
        .where('name', '=', 'Bad URI')
        .execute();
      assert.deepEqual(stored, [], 'none stored');
    });

    test('redirect URIs are stored normalised, and answered as stored', async () => {
      const token = await registrationToken();
      for (const [sent, normalised] of NORMALISED) {
        const registered = await register(server, token, { redirect_uris: [sent], post_logout_redirect_uris: [sent] });
        assert.equal(registered.status, 201, `${sent}: ${registered.text}`);
        assert.deepEqual(registered.json.redirect_uris, [normalised], registered.text);
        assert.deepEqual(registered.json.post_logout_redirect_uris, [normalised], registered.text);
        const row = await server.app.database.db
          .selectFrom('oauth_clients')
          .select(['redirect_uris', 'post_logout_redirect_uris'])
          .where('id', '=', String(registered.json.client_id))
          .executeTakeFirstOrThrow();
        assert.deepEqual(JSON.parse(row.redirect_uris), [normalised]);
        const created = await call(server.url, 'POST', '/api/admin/clients', {
          token: admin,
          body: {
            client_name: 'Normalised',
            client_type: 'public',
            grant_types: ['authorization_code'],
            redirect_uris: [sent],
          },
        });
        expectStatus(created, 201);
        assert.deepEqual(created.json.redirect_uris, [normalised], created.text);
        const patched = await call(server.url, 'PATCH', `/api/admin/clients/${created.json.client_id}`, {
          token: admin,
          contentType: 'application/merge-patch+json',
          body: { post_logout_redirect_uris: [sent] },
        });
        expectStatus(patched, 200);
        assert.deepEqual(patched.json.post_logout_redirect_uris, [normalised], patched.text);
      }
    });
  });
}

describe('a registration policy naming an admin scope', () => {
  test('stops the start', async () => {
    await assert.rejects(
      startAuthServer('sqlite', { DYNAMIC_REGISTRATION: 'true', REGISTRATION_SCOPES: 'orders:read admin:read' }),
      /REGISTRATION_SCOPES: admin:read is never given to a self-registered client/,
    );
  });
});
