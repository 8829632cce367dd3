// The console in a real browser: a page whose every request, console error and CSP violation is
// recorded, and sign-in through Signet's real login page. Used by test/console/*.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { createUser } from '../../src/auth-server/identity/users.repository.ts';
import { startAuthServer, type AuthTestServer } from './auth-server.ts';
import { findChromium, launchChromium } from './browser.ts';
import { testDialects, type TestDialect } from './databases.ts';
import { waitUntil } from './deadline.ts';

/** Playwright's waits give up after this long: a broken page fails fast. */
export const WAIT_MS = 10_000;

export interface ConsolePage {
  context: BrowserContext;
  page: Page;
  /** Every URL the browser requested, in order. */
  requests: string[];
  /** Console errors, uncaught exceptions, CSP violations, requests that tried to leave 127.0.0.1. */
  problems: string[];
  /** Fails listing `problems` when there are any. */
  assertClean(): void;
  close(): Promise<void>;
}

/**
 * A fresh browser context (no cookies) and page. CSP violations are reported from the page through an
 * exposed binding (a listener added by an init script, which the CSP does not govern).
 */
export async function openConsolePage(browser: Browser): Promise<ConsolePage> {
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT_MS);
  context.setDefaultNavigationTimeout(WAIT_MS);
  const requests: string[] = [];
  const problems: string[] = [];
  await context.exposeBinding('__reportCspViolation', (_source, text: string) => {
    problems.push(`CSP violation: ${text}`);
  });
  // A string, not a function: the test code is compiled without the DOM's types.
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (e) => {
      void globalThis.__reportCspViolation(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' in ' + e.sourceFile + ':' + e.lineNumber);
    });`,
  });
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || url.hostname === '127.0.0.1') return route.continue();
    problems.push(`request left 127.0.0.1: ${url.href}`);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // Chrome logs every 4xx answer to fetch(); a refused API call is the page's to show (ErrorBox), and
    // the tests that provoke one assert what the page says. Anything else is a problem.
    const apiAnswer = /^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text());
    if (apiAnswer && message.location().url.includes('/console/api/')) return;
    problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return {
    context,
    page,
    requests,
    problems,
    assertClean() {
      assert.deepEqual(problems, [], `the page reported problems:\n${problems.join('\n')}`);
    },
    close: () => context.close(),
  };
}

export interface TestUser {
  id: string;
  email: string;
  name: string;
  password: string;
}

let counter = 0;

/** A user holding the admin role, created as the CLI creates one (`signet user create --role admin`). */
export async function createAdmin(server: AuthTestServer): Promise<TestUser> {
  counter += 1;
  const input = {
    email: `admin${counter}-${Date.now()}@example.test`,
    name: `Ada Admin ${counter}`,
    password: `admin horse ${counter}`,
  };
  const created = await createUser(server.app.database.db, { ...input, roles: ['admin'] });
  return { id: created.id, ...input };
}

export function createPlainUser(server: AuthTestServer): Promise<TestUser> {
  counter += 1;
  return server.createUser({ name: `Pat Plain ${counter}` });
}

/** Fills Signet's login page (found by its labels) and submits with Enter. */
export async function fillLoginForm(page: Page, user: TestUser): Promise<void> {
  await page.getByLabel('E-mail').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByLabel('Password').press('Enter');
}

/**
 * Opens `path` (default /console), is sent to Signet's login page, signs in as `user` and waits until
 * the console shows that page again with the user's name in its header.
 */
export async function signInToConsole(
  page: Page,
  server: AuthTestServer,
  user: TestUser,
  path = '/console',
): Promise<void> {
  await page.goto(`${server.url}${path}`);
  await page.getByLabel('Password').waitFor();
  await fillLoginForm(page, user);
  await page.waitForURL(`${server.url}${path}`);
  await page.getByRole('banner').getByText(user.name).waitFor();
}

/** The text of the page's <main>, for assertion messages. */
export async function mainText(page: Page): Promise<string> {
  return (await page.locator('main').textContent()) ?? '(no main)';
}

/** What a browser suite's tests share: the one Chromium, and this dialect's server (set in `before`). */
export interface BrowserSuite {
  readonly dialect: TestDialect;
  readonly browser: Browser;
  readonly server: AuthTestServer;
}

export interface BrowserSuiteOptions {
  /** The server's environment (e.g. LOCAL_WEBHOOKS_ENV). */
  env?: Record<string, string>;
  /** Default testDialects(): every database-touching test runs on both. */
  dialects?: TestDialect[];
}

/**
 * describe(title) with one Chromium for the whole file and, per dialect, a describe(dialect) holding a
 * fresh Signet (startAuthServer) around `body`. Without Debian's chromium the file declares nothing.
 * `suite.browser` and `suite.server` are set once the hooks ran: read them in hooks and tests.
 */
export function describeInBrowser(
  title: string,
  body: (suite: BrowserSuite) => void,
  options: BrowserSuiteOptions = {},
): void {
  const chromiumPath = findChromium();
  if (!chromiumPath) return;
  describe(title, () => {
    let browser: Browser | undefined;
    before(async () => {
      browser = await launchChromium(chromiumPath);
    });
    after(async () => {
      await browser?.close();
    });
    for (const dialect of options.dialects ?? testDialects()) {
      describe(dialect, () => {
        let server: AuthTestServer | undefined;
        before(async () => {
          server = await startAuthServer(dialect, options.env);
        });
        after(async () => {
          await server?.close();
        });
        body({
          dialect,
          get browser() {
            assert.ok(browser, 'the browser is launched in before()');
            return browser;
          },
          get server() {
            assert.ok(server, 'the server is started in before()');
            return server;
          },
        });
      });
    }
  });
}

/**
 * Runs `body` on a fresh page, then checks the page stayed clean; a failure carries the URL and the text
 * of <main>, and the page is closed either way.
 */
export async function withPage(browser: Browser, body: (cp: ConsolePage) => Promise<void>): Promise<void> {
  const cp = await openConsolePage(browser);
  try {
    await body(cp);
    cp.assertClean();
  } catch (error) {
    const main = await cp.page
      .locator('main')
      .textContent({ timeout: 1000 })
      .catch(() => '(no main)');
    throw withContext(error, `--- page (${cp.page.url()}):\n${main}`);
  } finally {
    await cp.close();
  }
}

/**
 * Adds what explains a failure to the error. The stack too: the test runner prints the stack, which
 * Playwright's errors have already formatted with the message as it was.
 */
export function withContext(error: unknown, context: string): unknown {
  if (!(error instanceof Error)) return error;
  error.message += `\n${context}`;
  if (error.stack) error.stack += `\n${context}`;
  return error;
}

/** withPage, signed in as a new admin at `path`. */
export async function asAdmin(
  suite: Pick<BrowserSuite, 'browser' | 'server'>,
  path: string,
  body: (page: Page, cp: ConsolePage, admin: TestUser) => Promise<void>,
): Promise<void> {
  const admin = await createAdmin(suite.server);
  await withPage(suite.browser, async (cp) => {
    await signInToConsole(cp.page, suite.server, admin, path);
    await body(cp.page, cp, admin);
  });
}

/** Waits for the confirmation dialog, presses its `label` button, waits until it closes: the dialog's text. */
export async function confirm(page: Page, label: string): Promise<string> {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  const text = (await dialog.textContent()) ?? '';
  await dialog.getByRole('button', { name: label }).click();
  await dialog.waitFor({ state: 'hidden' });
  return text;
}

/** A table row holding `text` somewhere in it. */
export function rowWithText(scope: Page | Locator, text: string): Locator {
  return scope.getByRole('row').filter({ hasText: text });
}

/** A table row with a cell whose whole text is `text`. */
export function rowWithCell(page: Page, text: string): Locator {
  return page.getByRole('row').filter({ has: page.getByRole('cell', { name: text, exact: true }) });
}

/**
 * A datetime-local value for `ms` in the browser's own time zone, as a user types it (the page converts
 * it back to UTC).
 */
export function localInput(page: Page, ms: number): Promise<string> {
  return page.evaluate(`(() => {
    const d = new Date(${ms});
    const p = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes());
  })()`);
}

/** The data rows of the page's table (the header row left out). */
export function tableRows(page: Page): Locator {
  return page.locator('table tbody tr');
}

/** Waits until the table shows exactly `ids` (in any order), each somewhere in a row. */
export async function expectRows(page: Page, ids: string[], what: string): Promise<void> {
  let seen = '';
  await waitUntil(
    async () => {
      const texts = await tableRows(page).allTextContents();
      seen = texts.join('\n');
      return texts.length === ids.length && ids.every((id) => seen.includes(id));
    },
    WAIT_MS,
    () => `${what}: expected ${ids.length} rows holding ${ids.join(', ')}; the table shows:\n${seen}`,
  );
}

/** Submits a list page's filter form. */
export async function applyFilters(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Apply filters' }).click();
}

/** Waits until the page's status region (a live notice) says `text`. */
export async function waitForStatus(page: Page, text: string | RegExp): Promise<void> {
  await page.getByRole('status').filter({ hasText: text }).waitFor();
}
