// The console's backbone in a real browser (Debian's chromium through playwright-core): `/` leads to it,
// its strict CSP holds with no violation, sign-in goes through Signet's own login page as the built-in
// client (backend-for-frontend: HttpOnly cookie, no token in storage or URLs), the /console/api proxy
// refuses calls without a session, without the CSRF header or from another origin, sign-out ends the
// Signet session too, and a user without the admin role sees no operator page.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { withDeadline } from '../helpers/deadline.ts';
import type { AuthTestServer } from '../helpers/auth-server.ts';
import {
  describeInBrowser,
  createAdmin,
  createPlainUser,
  fillLoginForm,
  mainText,
  openConsolePage,
  signInToConsole,
  withPage,
  type ConsolePage,
} from '../helpers/console.ts';
import { expectProblem } from '../helpers/expect.ts';
import { fetchWithin } from '../helpers/http.ts';

const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/** A call to the console's API proxy with the browser's session cookie, as another program would make it. */
async function proxyCall(server: AuthTestServer, cp: ConsolePage, headers: Record<string, string>) {
  const cookies = await cp.context.cookies(server.url);
  const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const response = await fetchWithin(`${server.url}/console/api/admin/users`, { headers: { cookie, ...headers } });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function csrfTokenOf(server: AuthTestServer, cp: ConsolePage): Promise<string> {
  const session = (await cp.page.evaluate(async () => (await fetch('/console/session')).json())) as {
    csrf_token: string;
  };
  return session.csrf_token;
}

describeInBrowser('the console backbone in a real browser', (suite) => {
  test('/ leads to /console; the shell, its assets and its CSP', async () => {
    const root = await fetchWithin(`${suite.server.url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302, await root.text());
    assert.equal(root.headers.get('location'), '/console');
    for (const path of ['/console', '/console/users', '/console/no/such/page']) {
      const shell = await fetchWithin(`${suite.server.url}${path}`);
      const html = await shell.text();
      assert.equal(shell.status, 200, html);
      assert.equal(shell.headers.get('content-security-policy'), CONSOLE_CSP, path);
      assert.match(html, /<script type="module" src="\/console\/assets\/app.js"><\/script>/);
      assert.doesNotMatch(html, /<script>|<style|style=/, 'no inline script or style');
    }
    const vendor = await fetchWithin(`${suite.server.url}/console/vendor/preact-hooks.js`);
    const hooks = await vendor.text();
    assert.equal(vendor.status, 200);
    assert.match(hooks, /from"\/console\/vendor\/preact.js"/, 'the bare "preact" import is rewritten');
    assert.match(vendor.headers.get('cache-control') ?? '', /max-age=\d{6,}/);
    const etag = vendor.headers.get('etag');
    assert.ok(etag);
    const again = await fetchWithin(`${suite.server.url}/console/vendor/preact-hooks.js`, {
      headers: { 'if-none-match': etag },
    });
    assert.equal(again.status, 304);
    const missing = await fetchWithin(`${suite.server.url}/console/vendor/../../package.json`);
    assert.notEqual(missing.status, 200);
    const openapi = (await (await fetchWithin(`${suite.server.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    const consolePaths = Object.keys(openapi.paths).filter((p) => p === '/' || p.startsWith('/console'));
    assert.deepEqual(consolePaths, [], 'the console is not part of the API description');
  });

  test('an admin signs in through Signet and lands on the page asked for; tokens stay on the server', async () => {
    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    try {
      await signInToConsole(cp.page, suite.server, admin, '/console/clients');
      await cp.page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
      const nav = await cp.page.getByRole('navigation', { name: 'Console' }).textContent();
      assert.match(nav ?? '', /Users/);
      assert.match(nav ?? '', /Clients/);
      // The proxy works: the Users page lists the admin.
      await cp.page.getByRole('link', { name: 'Users' }).click();
      await cp.page.getByRole('cell', { name: admin.email, exact: true }).waitFor();
      assert.equal(cp.page.url(), `${suite.server.url}/console/users`);
      await cp.page.goBack();
      await cp.page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
      assert.equal(cp.page.url(), `${suite.server.url}/console/clients`);

      const consoleCookies = (await cp.context.cookies(suite.server.url)).filter((c) =>
        c.name.startsWith('signet-console'),
      );
      assert.deepEqual(
        consoleCookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.secure, c.path]),
        [['signet-console', true, 'Strict', false, '/']],
        'one session cookie: HttpOnly, SameSite=Strict, no Secure on loopback http',
      );
      const storage = await cp.page.evaluate(() => [localStorage.length, sessionStorage.length]);
      assert.deepEqual(storage, [0, 0], 'nothing in localStorage or sessionStorage');
      const callback = cp.requests.findIndex((url) => url.startsWith(`${suite.server.url}/console/callback?`));
      assert.ok(callback >= 0, `the browser came back through the callback: ${cp.requests.join('\n')}`);
      const later = cp.requests.slice(callback + 1);
      const tokenish = later.filter((url) => /token|eyJ/i.test(new URL(url).search));
      assert.deepEqual(tokenish, [], 'no URL visited after the callback carries a token');
      const html = await cp.page.content();
      assert.doesNotMatch(html, /eyJ[A-Za-z0-9_-]{10,}\./, 'no JWT in the page');
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });

  test('/console/api refuses a call without a session (401), without or with a wrong CSRF header or from another origin (403)', async () => {
    const anonymous = await fetchWithin(`${suite.server.url}/console/api/admin/users`, {
      headers: { 'x-signet-console-csrf': 'x' },
    });
    expectProblem(
      { status: anonymous.status, headers: anonymous.headers, text: await anonymous.text() },
      401,
      'unauthorized',
    );

    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    try {
      await signInToConsole(cp.page, suite.server, admin);
      const csrf = await csrfTokenOf(suite.server, cp);
      const fine = await proxyCall(suite.server, cp, { 'x-signet-console-csrf': csrf });
      assert.equal(fine.status, 200, fine.text);
      assert.ok(Array.isArray((JSON.parse(fine.text) as { Items: unknown[] }).Items));
      expectProblem(await proxyCall(suite.server, cp, {}), 403, 'forbidden', 'no CSRF header');
      expectProblem(
        await proxyCall(suite.server, cp, { 'x-signet-console-csrf': `${csrf}x` }),
        403,
        'forbidden',
        'wrong CSRF header',
      );
      expectProblem(
        await proxyCall(suite.server, cp, { 'x-signet-console-csrf': csrf, origin: 'http://evil.example' }),
        403,
        'forbidden',
        'another origin',
      );
      const sameOrigin = await proxyCall(suite.server, cp, { 'x-signet-console-csrf': csrf, origin: suite.server.url });
      assert.equal(sameOrigin.status, 200, sameOrigin.text);
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });

  test('an access token about to expire is refreshed, and the rotated refresh token is kept', async () => {
    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    try {
      await signInToConsole(cp.page, suite.server, admin);
      const db = suite.server.app.database.db;
      const before = await db.selectFrom('console_sessions').select(['id_hash', 'tokens']).execute();
      const mine = before.at(-1)!;
      // As if the access token had expired: the next call refreshes first.
      await db
        .updateTable('console_sessions')
        .set({ access_expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id_hash', '=', mine.id_hash)
        .execute();
      const csrf = await csrfTokenOf(suite.server, cp);
      const ok = await proxyCall(suite.server, cp, { 'x-signet-console-csrf': csrf });
      assert.equal(ok.status, 200, ok.text);
      const after = await db
        .selectFrom('console_sessions')
        .select(['tokens', 'access_expires_at'])
        .where('id_hash', '=', mine.id_hash)
        .executeTakeFirstOrThrow();
      assert.notEqual(after.tokens, mine.tokens, 'new tokens stored');
      assert.ok(new Date(after.access_expires_at).getTime() > Date.now(), 'a fresh access token');
      // Sealed: the cipher's iv.ciphertext.tag, and no JWT (header.payload, each base64url JSON: "eyJ").
      // A bare /eyJ/ also matched random ciphertext (about 1 run in 100: three base64url letters in ~2,700).
      assert.match(after.tokens, /^aes256gcm:[\w-]+\.[\w-]+\.[\w-]+$/, 'sealed at rest');
      assert.doesNotMatch(after.tokens, /eyJ[\w-]*\.eyJ/, 'no token in the clear');
      const again = await proxyCall(suite.server, cp, { 'x-signet-console-csrf': csrf });
      assert.equal(again.status, 200, again.text);
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });

  test('sign-out ends the console session and the Signet session: the next sign-in asks for the password', async () => {
    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    try {
      await signInToConsole(cp.page, suite.server, admin, '/console/users');
      await cp.page.getByRole('button', { name: 'Sign out' }).click();
      // The console ends the Signet session itself (test/console/sign-out.test.ts): no confirmation page.
      await cp.page.waitForURL(`${suite.server.url}/console/signed-out`);
      await cp.page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      const session = (await cp.page.evaluate(async () => (await fetch('/console/session')).json())) as {
        signed_in: boolean;
      };
      assert.equal(session.signed_in, false);

      await cp.page.getByRole('link', { name: 'Sign in again' }).click();
      await cp.page.getByLabel('Password').waitFor();
      assert.match(cp.page.url(), /\/oauth\/interaction\//, 'Signet asks for the password again');
      await fillLoginForm(cp.page, admin);
      await cp.page.waitForURL(`${suite.server.url}/console`);
      await cp.page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });

  test('a page request that the sign-out answers 401 while it is under way does not turn it into a new sign-in', async () => {
    const admin = await createAdmin(suite.server);
    await withPage(suite.browser, async (cp) => {
      await signInToConsole(cp.page, suite.server, admin, '/console/users');
      // The app signals a 401 with this event (src/console/assets/api.js) and acts on it in its own listener,
      // in the same dispatch: once this one has run, the page has made its choice. It reports through a
      // binding, which works while the page is navigating (an evaluate would wait for the navigation).
      let reportSeen!: () => void;
      const sessionEndedSeen = new Promise<void>((resolve) => (reportSeen = resolve));
      await cp.page.exposeFunction('signetTestSessionEnded', () => reportSeen());
      await cp.page.evaluate(() => {
        const page = globalThis as unknown as EventTarget & { signetTestSessionEnded(): void };
        page.addEventListener('signet:session-ended', () => page.signetTestSessionEnded());
      });
      // The next API request waits until the sign-out has ended the session on the server, then goes on
      // (and gets its 401); only once the page has handled that 401 does the sign-out's page reach it.
      let release!: () => void;
      const sessionGone = new Promise<void>((resolve) => (release = resolve));
      let apiAnswered!: (status: number) => void;
      const apiStatus = new Promise<number>((resolve) => (apiAnswered = resolve));
      await cp.page.route('**/console/api/**', async (route) => {
        await sessionGone;
        const response = await route.fetch();
        await route.fulfill({ response });
        apiAnswered(response.status());
      });
      await cp.page.route('**/console/logout', async (route) => {
        const response = await route.fetch();
        release();
        const status = await Promise.race([apiStatus, delay(5000).then(() => 0)]);
        // The sign-out's page only arrives once the page has acted on that 401 (without the fix: a redirect
        // to sign-in, which cancels this navigation).
        await withDeadline(sessionEndedSeen, 10_000, 'the page never handled the 401 of its request');
        await route.fulfill({ response }).catch(() => undefined);
        assert.equal(status, 401, 'the held request was answered after the session ended');
      });
      await cp.page.getByRole('link', { name: 'Clients' }).click();
      await cp.page.getByRole('button', { name: 'Sign out' }).click();
      await cp.page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      assert.equal(await apiStatus, 401, 'the request in flight was answered 401');
    });
  });

  test('a user without the admin role sees no operator page, is told so, and the API refuses them', async () => {
    const user = await createPlainUser(suite.server);
    const cp = await openConsolePage(suite.browser);
    try {
      await signInToConsole(cp.page, suite.server, user);
      const nav = (await cp.page.getByRole('navigation', { name: 'Console' }).textContent()) ?? '';
      assert.doesNotMatch(nav, /Users|Clients/, `no operator page in the nav: ${nav}`);
      await cp.page.goto(`${suite.server.url}/console/users`);
      const alert = cp.page.getByRole('alert');
      await alert.waitFor();
      assert.match((await alert.textContent()) ?? '', /not allowed/, await mainText(cp.page));
      const csrf = await csrfTokenOf(suite.server, cp);
      const refused = await proxyCall(suite.server, cp, { 'x-signet-console-csrf': csrf });
      expectProblem(refused, 403, 'insufficient-scope', 'the admin API through the proxy');
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });
});
