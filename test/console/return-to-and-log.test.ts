// Where a console sign-in returns to, and what the request log keeps of it, through real HTTP on both
// databases: return_to is normalised (WHATWG URL) before it is checked, so a dot segment cannot lead out
// of /console or into a portal link; the authorization code, state and other one-time values never reach
// the request log (src/http/ops/request-log.ts, docs/security.md).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { safeReturnTo } from '../../src/console/context.ts';
import { redactQuery } from '../../src/http/ops/request-log.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { createAdmin, type TestUser } from '../helpers/console.ts';
import { consoleSignIn } from '../helpers/console-http.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin } from '../helpers/http.ts';

const TOKEN = 'A'.repeat(43);

test('return_to is resolved before it is checked; what is kept is the normalised path', () => {
  const refused = [
    `/console/x/../portal-links/${TOKEN}`,
    `/console/x/%2e%2e/portal-links/${TOKEN}`,
    `/console/x/%2E%2E/portal-links/${TOKEN}`,
    `/console/x/..%2fportal-links/${TOKEN}`,
    `/console/./portal-links/${TOKEN}`,
    '/console/../oauth/session/end',
    '/console/%2e%2e/oauth/session/end',
    '/console/..',
    '/console/x/../../api/admin/users',
  ];
  for (const value of refused) assert.equal(safeReturnTo(value), '/console', value);
  assert.equal(safeReturnTo('/console/x/../users?q=1'), '/console/users?q=1');
  assert.equal(safeReturnTo('/console/clients'), '/console/clients');
  assert.equal(safeReturnTo('/console'), '/console');
});

test('the request log keeps the query’s names but not the values of codes, tokens and state', () => {
  assert.equal(
    redactQuery('/console/callback?code=abc&state=def&iss=http%3A%2F%2Fx'),
    '/console/callback?code=[redacted]&state=[redacted]&iss=http%3A%2F%2Fx',
  );
  assert.equal(
    redactQuery('/oauth/session/end?id_token_hint=eyJ&client_id=c'),
    '/oauth/session/end?id_token_hint=[redacted]&client_id=c',
  );
  assert.equal(redactQuery('/x?%63ode=abc&CODE=def&Token=t'), '/x?%63ode=[redacted]&CODE=[redacted]&Token=[redacted]');
  assert.equal(redactQuery('/x?%E0%A4%A=1'), '/x?%E0%A4%A=[redacted]', 'an undecodable name keeps no value');
  assert.equal(redactQuery('/api/orders?limit=5'), '/api/orders?limit=5');
});

for (const dialect of testDialects()) {
  describe(`console return_to and the request log over HTTP [${dialect}]`, () => {
    let server: AuthTestServer;
    let admin: TestUser;
    const log: Record<string, unknown>[] = [];

    before(async () => {
      server = await startAuthServer(dialect, {}, undefined, { logLines: log });
      admin = await createAdmin(server);
    });
    after(() => server.close());

    for (const returnTo of [`/console/x/../portal-links/${TOKEN}`, '/console/../oauth/session/end']) {
      test(`a sign-in asked to return to ${returnTo} lands on /console`, async () => {
        const signedIn = await consoleSignIn(server, admin, { returnTo });
        assert.equal(signedIn.status, 303);
        assert.equal(signedIn.location, '/console');
      });
    }

    test('a sign-in returns to a normalised page under /console', async () => {
      const signedIn = await consoleSignIn(server, admin, { returnTo: '/console/x/../users' });
      assert.equal(signedIn.location, '/console/users');
    });

    test('the console’s authorization code and state appear in no request log line', async () => {
      const signedIn = await consoleSignIn(server, admin);
      const code = signedIn.callback.searchParams.get('code')!;
      const state = signedIn.callback.searchParams.get('state')!;
      assert.ok(code && state, signedIn.callback.href);
      const session = await fetchWithin(`${server.url}/console/session`, {
        headers: { cookie: signedIn.jar.header() },
      });
      assert.equal(((await session.json()) as { signed_in: boolean }).signed_in, true, 'the sign-in worked');
      const text = log.map((line) => JSON.stringify(line)).join('\n');
      const callbacks = log.filter((line) =>
        String((line.req as { url?: string })?.url).startsWith('/console/callback'),
      );
      assert.ok(callbacks.length > 0, `the callback was logged:\n${text}`);
      for (const line of callbacks) assert.match(String((line.req as { url: string }).url), /code=\[redacted\]/);
      assert.ok(!text.includes(code), `the code appears in the log:\n${text}`);
      assert.ok(!text.includes(state), `the state appears in the log:\n${text}`);
    });
  });
}
