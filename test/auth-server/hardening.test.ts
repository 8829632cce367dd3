// The authorization server's edges, where oidc-provider's defaults differed from the RFCs or from the rest of the
// service (src/auth-server/plugin.ts, request-shaping.ts, response-shaping.ts): URLs that always belong to the issuer
// however the path is spelled, RFC 6749 §5.2 error codes, 404/405 problem+json, logged faults with a request id, and
// the request shapes of docs/guides/signing-in-users.md on every spelling of a route.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin } from '../helpers/http.ts';
import { pkcePair } from '../helpers/oauth-flow.ts';
import { jwtParts, tokenRequest } from '../helpers/oauth-requests.ts';
import { expectJson, expectStatus } from '../helpers/expect.ts';

const FORGED = { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https', host: 'evil.example' };

for (const dialect of testDialects()) {
  describe(`authorization server hardening [${dialect}]`, () => {
    let server: AuthTestServer;
    let machine: { clientId: string; clientSecret: string | undefined };

    before(async () => {
      server = await startAuthServer(dialect);
      machine = await server.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['orders:read'],
      });
    });
    after(() => server.stop());

    test('discovery lists the issuer’s own URLs however the mount path is spelled, forged Host or not', async () => {
      for (const mount of ['/oauth', '/OAUTH', '/oAuth', '/%6Fauth']) {
        const response = await fetchWithin(`${server.url}${mount}/.well-known/openid-configuration`, {
          headers: FORGED,
        });
        if (response.status === 404) continue; // a spelling nothing serves is fine; a forged URL is not
        const metadata = (await expectJson(response, 200, mount)) as Record<string, unknown>;
        for (const [name, value] of Object.entries(metadata)) {
          if (typeof value === 'string' && /^https?:\/\//.test(value))
            assert.ok(value.startsWith(server.url), `${mount}: ${name} = ${value}`);
        }
      }
    });

    test('a token request without any client authentication is 401 invalid_client with WWW-Authenticate', async () => {
      const result = await tokenRequest(server, { grant_type: 'client_credentials' });
      expectStatus(result, 401);
      assert.equal(result.body.error, 'invalid_client');
      assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
      assert.equal(result.headers.get('cache-control'), 'no-store');
    });

    test('a grant the client is not registered for is unauthorized_client (RFC 6749 §5.2)', async () => {
      const result = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: machine.clientId,
        client_secret: machine.clientSecret!,
      });
      expectStatus(result, 400);
      assert.equal(result.body.error, 'unauthorized_client');
    });

    test('client credentials with a .default of an unknown resource, or an unknown scope, is invalid_scope, not a token without scopes', async () => {
      for (const scope of [
        'http://localhost:1/api/.default',
        `${server.resource}/x/.default`,
        'https://other.example/.default',
        'orders:reed',
        'openid',
      ]) {
        const result = await tokenRequest(
          server,
          { grant_type: 'client_credentials', scope },
          { basic: [machine.clientId, machine.clientSecret!] },
        );
        assert.equal(result.status, 400, scope);
        assert.equal(result.body.error, 'invalid_scope', scope);
        assert.equal(result.body.access_token, undefined);
      }
      const good = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: `${server.resource}/.default` },
        { basic: [machine.clientId, machine.clientSecret!] },
      );
      expectStatus(good, 200);
      assert.equal(good.body.scope, 'orders:read');
    });

    test('the contract’s shapes work on every spelling oidc-provider routes: /TOKEN, /token/', async () => {
      for (const path of ['/TOKEN', '/token/']) {
        const response = await fetchWithin(`${server.issuer}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            client_id: machine.clientId,
            client_secret: machine.clientSecret!,
            scope: `${server.resource}/.default`,
          }),
        });
        const body = (await expectJson(response, 200, path)) as Record<string, unknown>;
        assert.equal(body.scope, 'orders:read', path);
        assert.equal(jwtParts(body.access_token).payload.scope, 'orders:read', path);
      }
    });

    test('the authorization request in the contract’s shape works on HEAD and with a trailing slash (S256 assumed)', async () => {
      const web = await server.createClient();
      const { challenge } = pkcePair();
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: web.clientId,
        code_challenge: challenge,
        scope: 'openid',
      });
      for (const [method, path] of [
        ['HEAD', '/authorize'],
        ['GET', '/authorize/'],
      ]) {
        const response = await fetchWithin(`${server.issuer}${path}?${query}`, { method, redirect: 'manual' });
        await expectStatus(response, 303, `${method} ${path}`);
        const location = response.headers.get('location') ?? '';
        assert.match(location, /\/oauth\/interaction\//, `${method} ${path} → ${location}`);
      }
    });

    test('a repeated scope parameter at /authorize is refused (RFC 6749 §3.1), not half-read', async () => {
      const web = await server.createClient();
      const { challenge } = pkcePair();
      const query = `response_type=code&client_id=${web.clientId}&code_challenge=${challenge}&scope=openid&scope=email`;
      const response = await fetchWithin(`${server.issuer}/authorize?${query}`, { redirect: 'manual' });
      const location = new URL(response.headers.get('location') ?? '', server.url);
      assert.equal(location.searchParams.get('error'), 'invalid_request', location.href);
      assert.match(location.searchParams.get('error_description') ?? '', /scope/);
    });

    test('an over-large token request is 413, also when expanding its scope would push it over the limit', async () => {
      const huge = await fetchWithin(`${server.issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&pad=${'a'.repeat(60_000)}`,
      });
      await expectStatus(huge, 413);
      assert.equal(huge.headers.get('cache-control'), 'no-store');
      assert.equal(((await huge.json()) as { error: string }).error, 'invalid_request');
      // 40 KB as sent ("+" for each space) but over 56 KiB once re-encoded ("%20").
      const spaced = `grant_type=client_credentials&scope=orders%3Aread&resource=${'a+'.repeat(20_000)}`;
      const grown = await fetchWithin(`${server.issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${machine.clientId}:${machine.clientSecret}`).toString('base64')}`,
        },
        body: spaced,
      });
      assert.equal(grown.status, 413, await grown.clone().text());
    });

    test('a path nothing serves under /oauth is a 404 problem; a route asked with another method a 405 with Allow', async () => {
      const missing = await fetchWithin(`${server.issuer}/nope`);
      await expectStatus(missing, 404);
      assert.equal(missing.headers.get('content-type'), 'application/problem+json');
      const problem = (await missing.json()) as Record<string, unknown>;
      assert.equal(problem.status, 404);
      assert.equal(problem.instance, `${server.url}/oauth/nope`);
      assert.ok(problem.requestId);
      assert.equal(missing.headers.get('x-request-id'), problem.requestId);

      const cases: [string, string, string][] = [
        ['GET', '/token', 'POST, OPTIONS'],
        ['PUT', '/token', 'POST, OPTIONS'],
        ['DELETE', '/authorize', 'GET, HEAD, POST'],
        ['GET', '/revoke', 'POST, OPTIONS'],
        ['POST', '/jwks', 'GET, HEAD, OPTIONS'],
      ];
      for (const [method, path, allow] of cases) {
        const response = await fetchWithin(`${server.issuer}${path}`, { method });
        assert.equal(response.status, 405, `${method} ${path}`);
        assert.equal(response.headers.get('allow'), allow, `${method} ${path}`);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
      }
    });

    test('a plain OPTIONS (no CORS preflight) is 204 with Allow', async () => {
      const response = await fetchWithin(`${server.issuer}/token`, { method: 'OPTIONS' });
      await expectStatus(response, 204);
      assert.equal(response.headers.get('allow'), 'POST, OPTIONS');
    });

    test('every method the 405s list is one oidc-provider serves', async () => {
      const served: [string, string][] = [
        ['GET', '/jwks'],
        ['HEAD', '/jwks'],
        ['OPTIONS', '/token'],
        ['GET', '/.well-known/openid-configuration'],
        ['GET', '/session/end'],
        ['POST', '/session/end/confirm'],
        ['POST', '/userinfo'],
        ['POST', '/introspect'],
      ];
      for (const [method, path] of served) {
        const response = await fetchWithin(`${server.issuer}${path}`, {
          method,
          redirect: 'manual',
          headers: { origin: 'https://app.example' },
        });
        assert.ok(![404, 405].includes(response.status), `${method} ${path} → ${response.status}`);
      }
    });

    test('a fault is logged with its cause and request id; the answer is generic and carries the id', async () => {
      const logged: { obj: Record<string, unknown>; msg: string }[] = [];
      const web = await server.createClient({ grantTypes: ['authorization_code'], scopes: ['orders:read'] });
      const log = server.app.log as unknown as { error: (obj: Record<string, unknown>, msg: string) => void };
      const original = log.error;
      log.error = (obj, msg) => void logged.push({ obj, msg });
      await sql`alter table oidc_payloads rename to oidc_payloads_away`.execute(server.app.database.db);
      try {
        const result = await tokenRequest(
          server,
          {
            grant_type: 'authorization_code',
            code: 'anything',
            code_verifier: 'x'.repeat(43),
            redirect_uri: web.redirectUri,
          },
          { basic: [web.clientId, web.clientSecret!] },
        );
        expectStatus(result, 500);
        assert.equal(result.body.error, 'server_error');
        const requestId = result.headers.get('x-request-id');
        assert.ok(requestId);
        assert.equal(result.body.request_id, requestId);
        const entry = logged.find((l) => l.msg === 'authorization server error');
        assert.ok(entry, `logged: ${JSON.stringify(logged.map((l) => l.msg))}`);
        assert.equal(entry.obj.reqId, requestId);
        assert.match(String((entry.obj.err as Error).message), /oidc_payloads/);
      } finally {
        await sql`alter table oidc_payloads_away rename to oidc_payloads`.execute(server.app.database.db);
        log.error = original;
      }
    });
  });
}
