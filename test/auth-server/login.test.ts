// The login page against brute force: per-account and per-address throttling with growing delays,
// bounded so that the real user is never locked out for good.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loginWaitMs, recordLoginFailure, throttleKeys } from '../../src/auth-server/identity/login-throttle.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin, locationOf } from '../helpers/http.ts';
import { CookieJar, pkcePair } from '../helpers/oauth-flow.ts';

interface LoginPage {
  action: string;
  csrf: string;
  jar: CookieJar;
}

async function openLoginPage(server: AuthTestServer, clientId: string): Promise<LoginPage> {
  const jar = new CookieJar();
  const authorize = await fetchWithin(
    `${server.issuer}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, code_challenge: pkcePair().challenge, scope: 'openid' })}`,
    { redirect: 'manual' },
  );
  jar.store(authorize);
  const pageUrl = await locationOf(authorize, server.url);
  const page = await fetchWithin(pageUrl, { headers: { cookie: jar.header() } });
  const html = await page.text();
  const action = /action="([^"]+)"/.exec(html)?.[1];
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  assert.ok(action && csrf, `no login form at ${pageUrl.href} (HTTP ${page.status}): ${html.slice(0, 2000)}`);
  return { action: new URL(action, server.url).href, csrf, jar };
}

async function submitLogin(
  page: LoginPage,
  email: string,
  password: string,
  csrf = page.csrf,
): Promise<{ status: number; retryAfter: string | null; html: string; location: string | null }> {
  const response = await fetchWithin(page.action, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: page.jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email, password }).toString(),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    html: await response.text(),
    location: response.headers.get('location'),
  };
}

for (const dialect of testDialects()) {
  describe(`login page [${dialect}]`, () => {
    let server: AuthTestServer;
    let clientId: string;
    before(async () => {
      server = await startAuthServer(dialect, { LOGIN_MAX_FAILURES: '3' });
      clientId = (await server.createClient()).clientId;
    });
    after(() => server.close());

    test('a wrong password is 401 with a message that does not say which part was wrong', async () => {
      const user = await server.createUser();
      const result = await submitLogin(await openLoginPage(server, clientId), user.email, 'wrong password');
      assert.equal(result.status, 401, result.html);
      assert.match(result.html, /role="alert"[^>]*>The e-mail address or the password is not right/);
      const unknown = await submitLogin(await openLoginPage(server, clientId), 'nobody@example.test', 'whatever1');
      assert.equal(unknown.status, 401, unknown.html);
      assert.match(unknown.html, /The e-mail address or the password is not right/);
    });

    test('brute force on one account gets 429 with Retry-After, even with the right password, and other accounts are unaffected', async () => {
      const user = await server.createUser();
      const page = await openLoginPage(server, clientId);
      for (let i = 0; i < 3; i += 1) {
        const guessed = await submitLogin(page, user.email, `guess ${i}`);
        assert.equal(guessed.status, 401, guessed.html);
      }
      const blocked = await submitLogin(page, user.email, user.password);
      assert.equal(blocked.status, 429, blocked.html);
      assert.ok(Number(blocked.retryAfter) >= 1);
      assert.match(blocked.html, /Too many failed attempts/);
      const other = await server.createUser();
      const fine = await submitLogin(await openLoginPage(server, clientId), other.email, other.password);
      assert.equal(fine.status, 303, 'another account logs in');
    });

    test('the delay grows with each failure and is bounded: the real user is never locked out for good', async () => {
      const db = server.app.database.db;
      const keys = throttleKeys(`victim-${Date.now()}@example.test`, '192.0.2.77');
      const now = new Date('2026-11-21T12:00:00Z');
      const waits: number[] = [];
      for (let i = 0; i < 20; i += 1) {
        const at = new Date(now.getTime() + i * 1000);
        await recordLoginFailure(db, keys, { maxFailures: 3 }, at);
        waits.push(await loginWaitMs(db, keys, at));
      }
      assert.deepEqual(waits.slice(0, 2), [0, 0]);
      assert.equal(waits[2], 1000);
      assert.equal(waits[3], 2000);
      assert.equal(waits[4], 4000);
      assert.equal(Math.max(...waits), 15 * 60 * 1000, 'capped at 15 minutes');
      assert.equal(await loginWaitMs(db, keys, new Date(now.getTime() + 20 * 1000 + 15 * 60 * 1000)), 0);
    });

    test('many accounts from one address: the address is throttled too', async () => {
      const db = server.app.database.db;
      const address = '198.51.100.9';
      const at = new Date();
      for (let i = 0; i < 12; i += 1)
        await recordLoginFailure(
          db,
          throttleKeys(`spray${i}-${Date.now()}@example.test`, address),
          { maxFailures: 3 },
          at,
        );
      assert.ok((await loginWaitMs(db, throttleKeys('fresh@example.test', address), at)) > 0);
      assert.equal(await loginWaitMs(db, throttleKeys('fresh@example.test', '198.51.100.10'), at), 0);
    });

    test('a form without the right CSRF token is refused', async () => {
      const user = await server.createUser();
      const page = await openLoginPage(server, clientId);
      const forged = await submitLogin(page, user.email, user.password, 'forged');
      assert.equal(forged.status, 403, forged.html);
      const noCookie = await submitLogin({ ...page, jar: new CookieJar() }, user.email, user.password);
      assert.equal(noCookie.status, 400, 'without the interaction cookie there is nothing to log in to');
    });

    test('the pages send a strict Content-Security-Policy and are never cached', async () => {
      const page = await openLoginPage(server, clientId);
      const response = await fetchWithin(page.action.replace(/\/login$/, ''), {
        headers: { cookie: page.jar.header() },
      });
      const csp = response.headers.get('content-security-policy') ?? '';
      assert.match(
        csp,
        /^default-src 'none'; style-src 'sha256-[^']+'; form-action 'self' [^;]+; frame-ancestors 'none'; base-uri 'none'$/,
      );
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('x-frame-options'), 'DENY');
    });
  });
}
