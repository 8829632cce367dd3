// The login and consent pages in a real browser (Debian's chromium through playwright-core): the
// authorization code flow in the exact shapes of docs/guides/signing-in-users.md, driven by the keyboard and by the
// pages' labels and roles; a wrong password; the strict Content-Security-Policy with no violations; and Deny.
// The redirect URI is a real HTTP server, so the browser really lands on the client.
// Runs when /usr/bin/chromium exists; with TEST_BROWSER_REQUIRED=1 a missing chromium fails the suite.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Browser, BrowserContext, ConsoleMessage, Page } from 'playwright-core';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import {
  CHROMIUM_PATH,
  findChromium,
  launchChromium,
  startCallbackServer,
  type CallbackServer,
} from '../helpers/browser.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectJson } from '../helpers/expect.ts';
import { fetchWithin } from '../helpers/http.ts';
import { pkcePair } from '../helpers/oauth-flow.ts';

/** Playwright's waits give up after this long: a broken page fails fast instead of after 30 s. */
const WAIT_MS = 10_000;

interface AuthorizationRequest {
  url: string;
  state: string;
  nonce: string;
  verifier: string;
}

/** The guide's authorization request: no redirect_uri, no code_challenge_method (S256 is implied). */
function authorizationRequest(server: AuthTestServer, clientId: string): AuthorizationRequest {
  const { verifier, challenge } = pkcePair();
  const state = randomBytes(12).toString('base64url');
  const nonce = randomBytes(12).toString('base64url');
  const query = `response_type=code&client_id=${encodeURIComponent(clientId)}&code_challenge=${challenge}&scope=openid%20profile%20email&state=${state}&nonce=${nonce}`;
  return { url: `${server.url}/oauth/authorize?${query}`, state, nonce, verifier };
}

async function newPage(browser: Browser): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT_MS);
  context.setDefaultNavigationTimeout(WAIT_MS);
  return { context, page: await context.newPage() };
}

/** Types the credentials into the fields found by their labels and submits with Enter, as a keyboard user would. */
async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByLabel('Password').press('Enter');
}

async function waitForConsent(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Allow' }).waitFor();
}

/** Waits until the browser shows the client's callback and returns the URL it landed on. */
async function waitForCallback(page: Page, callback: CallbackServer): Promise<URL> {
  await page.waitForURL((url) => url.href.startsWith(`${callback.url}?`));
  return new URL(page.url());
}

const chromiumPath = findChromium();

if (chromiumPath) {
  describe('login and consent pages in a real browser', () => {
    let browser: Browser;
    before(async () => {
      browser = await launchChromium(chromiumPath);
    });
    after(async () => {
      await browser?.close();
    });

    for (const dialect of testDialects()) {
      describe(dialect, () => {
        let server: AuthTestServer;
        let callback: CallbackServer;
        let clientId: string;
        let clientSecret: string;
        before(async () => {
          callback = await startCallbackServer();
          server = await startAuthServer(dialect);
          const client = await server.createClient({ redirectUris: [callback.url] });
          clientId = client.clientId;
          assert.ok(client.clientSecret, 'a confidential client has a secret');
          clientSecret = client.clientSecret;
        });
        after(async () => {
          await server?.close();
          await callback?.close();
        });

        test('sign in with the keyboard, allow, land on the callback, exchange the code for tokens', async () => {
          const user = await server.createUser();
          const request = authorizationRequest(server, clientId);
          const { context, page } = await newPage(browser);
          try {
            const first = await page.goto(request.url);
            assert.equal(first?.status(), 200, await page.content());
            assert.match(page.url(), new RegExp(`^${server.url}/oauth/interaction/[A-Za-z0-9_-]+$`));
            assert.match(await page.title(), /Sign in/);

            await signIn(page, user.email, user.password);
            await waitForConsent(page);
            assert.match(page.url(), new RegExp(`^${server.url}/oauth/interaction/[A-Za-z0-9_-]+$`));
            const scopes = await page.getByRole('listitem').allTextContents();
            // openid profile email as asked, plus the client's API scopes (the request named none).
            assert.deepEqual(
              new Set(scopes),
              new Set([
                'Sign you in with your Signet account',
                'See your name',
                'See your e-mail address',
                'See your orders',
                'Create, change, pay and cancel your orders',
              ]),
            );
            await page.getByRole('button', { name: 'Allow' }).click();

            const landed = await waitForCallback(page, callback);
            assert.equal(
              await page.getByText('Callback received').count(),
              1,
              'the browser shows the client callback page',
            );
            const code = landed.searchParams.get('code');
            assert.ok(code, `callback has a code: ${landed.href}`);
            assert.equal(landed.searchParams.get('state'), request.state);
            assert.equal(landed.searchParams.get('iss'), server.issuer);
            assert.equal(landed.searchParams.get('error'), null);
            assert.deepEqual(
              callback.received.at(-1)?.href,
              landed.href,
              'the callback server received what the browser shows',
            );

            // The guide's code exchange: no grant_type, client credentials in the form.
            const response = await fetchWithin(`${server.url}/oauth/token`, {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: new URLSearchParams({
                code,
                code_verifier: request.verifier,
                client_id: clientId,
                client_secret: clientSecret,
              }),
            });
            const tokens = (await expectJson(response, 200, 'the code exchange')) as Record<string, unknown>;
            assert.equal(typeof tokens.access_token, 'string');
            assert.equal(typeof tokens.id_token, 'string');
            assert.equal(typeof tokens.refresh_token, 'string');
            assert.equal(tokens.token_type, 'Bearer');

            const jwks = createRemoteJWKSet(new URL(`${server.issuer}/jwks`));
            const { payload } = await jwtVerify(tokens.id_token as string, jwks, {
              issuer: server.issuer,
              audience: clientId,
            });
            assert.equal(payload.sub, user.id);
            assert.equal(payload.email, user.email);
            assert.equal(payload.name, user.name);
            assert.equal(payload.nonce, request.nonce);
          } finally {
            await context.close();
          }
        });

        test('a wrong password shows an error (role=alert, 401) and the page still works afterwards', async () => {
          const user = await server.createUser();
          const request = authorizationRequest(server, clientId);
          const { context, page } = await newPage(browser);
          try {
            await page.goto(request.url);
            const rejected = page.waitForResponse(
              (r) => r.request().method() === 'POST' && /\/oauth\/interaction\/[^/]+\/login$/.test(r.url()),
            );
            await signIn(page, user.email, `${user.password} but wrong`);
            assert.equal((await rejected).status(), 401);

            const alert = page.getByRole('alert');
            await alert.waitFor();
            assert.equal((await alert.textContent())?.trim(), 'The e-mail address or the password is not right.');
            // The typed address is kept, the password is not; both fields point at the error.
            assert.equal(await page.getByLabel('E-mail').inputValue(), user.email);
            assert.equal(await page.getByLabel('Password').inputValue(), '');
            assert.equal(
              await page.getByLabel('Password').getAttribute('aria-describedby'),
              await alert.getAttribute('id'),
            );

            // Same page, correct password this time: the flow carries on to the client.
            const accepted = page.waitForResponse(
              (r) => r.request().method() === 'POST' && /\/oauth\/interaction\/[^/]+\/login$/.test(r.url()),
            );
            await page.getByLabel('Password').fill(user.password);
            await page.getByLabel('Password').press('Enter');
            assert.equal((await accepted).status(), 303);
            await waitForConsent(page);
            await page.getByRole('button', { name: 'Allow' }).click();
            const landed = await waitForCallback(page, callback);
            assert.ok(landed.searchParams.get('code'), `callback has a code: ${landed.href}`);
            assert.equal(landed.searchParams.get('state'), request.state);
          } finally {
            await context.close();
          }
        });

        test("the pages send a strict Content-Security-Policy (default-src 'none') and cause no violations", async () => {
          const user = await server.createUser();
          const request = authorizationRequest(server, clientId);
          const { context, page } = await newPage(browser);
          const consoleMessages: ConsoleMessage[] = [];
          page.on('console', (message) => consoleMessages.push(message));
          const violations = () =>
            consoleMessages
              .filter((m) => /Content Security Policy|Content-Security-Policy/i.test(m.text()))
              .map((m) => `${m.type()}: ${m.text()}`);
          const policies = new Map<string, string | undefined>();
          page.on('response', (response) => {
            if (
              response.request().isNavigationRequest() &&
              response.url().startsWith(`${server.url}/oauth/interaction/`) &&
              response.status() < 300
            ) {
              policies.set(
                `${response.request().method()} ${response.url()}`,
                response.headers()['content-security-policy'],
              );
            }
          });
          try {
            // Control: the listener does see a violation when a page breaks its policy.
            await page.route('http://csp-control.test/', (route) =>
              route.fulfill({
                status: 200,
                headers: { 'content-type': 'text/html', 'content-security-policy': "default-src 'none'" },
                body: '<!doctype html><style>p{color:red}</style><p>control</p>',
              }),
            );
            const controlViolation = page.waitForEvent('console', {
              predicate: (m) => /Content Security Policy/i.test(m.text()),
            });
            await page.goto('http://csp-control.test/');
            await controlViolation;
            assert.ok(violations().length > 0, 'the control violation reached the listener');
            consoleMessages.length = 0;

            await page.goto(request.url);
            await signIn(page, user.email, user.password);
            await waitForConsent(page);
            await page.getByRole('button', { name: 'Allow' }).click();
            const landed = await waitForCallback(page, callback);
            assert.ok(landed.searchParams.get('code'), `callback has a code: ${landed.href}`);

            assert.ok(policies.size >= 2, `the login and consent pages were seen: ${[...policies.keys()].join(', ')}`);
            for (const [where, policy] of policies) {
              assert.ok(policy, `${where} sends a Content-Security-Policy`);
              const directives = new Map(
                policy
                  .split(';')
                  .map((d) => d.trim())
                  .filter(Boolean)
                  .map((d) => {
                    const [name = '', ...values] = d.split(/\s+/);
                    return [name.toLowerCase(), values.join(' ')] as const;
                  }),
              );
              assert.equal(directives.get('default-src'), "'none'", `${where}: ${policy}`);
              assert.equal(directives.get('frame-ancestors'), "'none'", `${where}: ${policy}`);
              assert.equal(directives.get('base-uri'), "'none'", `${where}: ${policy}`);
              assert.ok(!directives.has('script-src'), `${where} allows no script: ${policy}`);
              assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|\*/, `${where}: ${policy}`);
            }
            assert.deepEqual(violations(), []);
          } finally {
            await context.close();
          }
        });

        test("'Deny' on the consent page lands on the callback with error=access_denied", async () => {
          const user = await server.createUser();
          const request = authorizationRequest(server, clientId);
          const { context, page } = await newPage(browser);
          try {
            await page.goto(request.url);
            await signIn(page, user.email, user.password);
            await waitForConsent(page);
            await page.getByRole('button', { name: 'Deny' }).click();
            const landed = await waitForCallback(page, callback);
            assert.equal(landed.searchParams.get('error'), 'access_denied');
            assert.equal(landed.searchParams.get('state'), request.state);
            assert.equal(landed.searchParams.get('iss'), server.issuer);
            assert.equal(landed.searchParams.get('code'), null);
          } finally {
            await context.close();
          }
        });
      });
    }
  });
} else if (process.env.TEST_BROWSER_REQUIRED === '1') {
  test('chromium is installed (TEST_BROWSER_REQUIRED=1)', () => {
    assert.fail(
      `TEST_BROWSER_REQUIRED=1 but there is no executable ${CHROMIUM_PATH}; install Debian's chromium (apt-get install chromium) to run test/auth-server/browser.test.ts`,
    );
  });
} else {
  test(
    'login and consent pages in a real browser',
    {
      skip: `no executable ${CHROMIUM_PATH}: install Debian's chromium (apt-get install chromium) to run these tests; TEST_BROWSER_REQUIRED=1 makes its absence a failure`,
    },
    () => {},
  );
}
