// Console front-end bugs found in review (docs/guides/portal.md), each shown in a real browser: a slow answer (held by
// a route until the test releases it) must not wipe typed filters, show a stale delivery or lose a reload;
// a double click must not create twice; a missing Clipboard API must not leave the secret's copy button
// mute. Fixed element ids (ConfirmDialog, SecretOnce) are not shown here: no page renders two at once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page, Request, Route } from 'playwright-core';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { findChromium, launchChromium } from '../helpers/browser.ts';
import {
  createAdmin,
  createPlainUser,
  mainText,
  openConsolePage,
  signInToConsole,
  WAIT_MS,
  type ConsolePage,
} from '../helpers/console.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call } from '../helpers/http.ts';
import { createPortalClient, openPortalByLink, type PortalClient } from '../helpers/portal.ts';
import { LOCAL_WEBHOOKS_ENV, startReceiver, type TestReceiver } from '../helpers/webhook-receiver.ts';

/**
 * The page's requests matching `match` wait until `release()`: the network made slow, in the test's hands.
 * `releaseAll()` also lets every later one through.
 */
async function hold(page: Page, match: (request: Request) => boolean) {
  const held: Route[] = [];
  let holding = true;
  await page.route('**/*', (route) => {
    if (!holding || !match(route.request())) return route.fallback();
    held.push(route);
  });
  return {
    held,
    /** Waits until a held request's URL matches `pattern`, then returns its route. */
    async waitFor(pattern: RegExp): Promise<Route> {
      let found: Route | undefined;
      await waitUntil(
        () => (found = held.find((r) => pattern.test(r.request().url()))) !== undefined,
        WAIT_MS,
        () => `a held request matching ${pattern}; held: ${held.map((r) => r.request().url()).join(', ')}`,
      );
      return found!;
    },
    release: (route: Route) => {
      held.splice(held.indexOf(route), 1);
      return route.continue();
    },
    releaseAll: async () => {
      holding = false;
      await Promise.all(held.splice(0).map((r) => r.continue()));
    },
  };
}

/**
 * Records, in the page, the URL of every response body read as JSON. The page's own continuation (state
 * update, Preact's render, both microtasks) has run once the test sees a URL here, so a stale answer has
 * had its chance to show.
 */
const RECORD_JSON_READS = `(() => {
  const json = Response.prototype.json;
  globalThis.__jsonRead = [];
  Response.prototype.json = function () {
    return json.call(this).then((value) => { globalThis.__jsonRead.push(this.url); return value; });
  };
})();`;

async function answerRead(page: Page, urlPart: string): Promise<void> {
  // Polled with page.evaluate (run by the debugger protocol): waitForFunction with a string predicate
  // evaluates it in the page, which the console's CSP (no 'unsafe-eval') refuses.
  const read = `globalThis.__jsonRead.some((u) => u.includes(${JSON.stringify(urlPart)}))`;
  await waitUntil(
    async () => Boolean(await page.evaluate(read)),
    10_000,
    () => `the page never read ${urlPart}`,
  );
}

/** Runs `body`; a failure also says what the page showed then (the wait's own message names only the locator). */
async function onPage(cp: ConsolePage, body: () => Promise<void>): Promise<void> {
  try {
    await body();
    cp.assertClean();
  } catch (error) {
    const shown = await mainText(cp.page).catch(() => '(no page text)');
    throw new Error(
      `${(error as Error).message}\npage ${cp.page.url()} showed: ${shown}\nproblems: ${cp.problems.join('; ')}`,
      {
        cause: error,
      },
    );
  } finally {
    await cp.close();
  }
}

const isGet = (request: Request, path: RegExp) =>
  request.method() === 'GET' && path.test(new URL(request.url()).pathname);

const chromiumPath = findChromium();
if (chromiumPath) {
  // One browser for the file (a launch is most of a second); each test opens its own context.
  let browser: Browser;
  before(async () => {
    browser = await launchChromium(chromiumPath);
  });
  after(async () => {
    await browser?.close();
  });
  for (const dialect of testDialects()) {
    describe(`console front-end fixes [${dialect}]`, () => {
      let server: AuthTestServer;
      let receiver: TestReceiver;
      let shop: PortalClient;
      let endpoint: string;

      before(async () => {
        server = await startAuthServer(dialect, LOCAL_WEBHOOKS_ENV);
        receiver = await startReceiver();
        shop = await createPortalClient(server, 'Front-end shop');
        const created = await call(server.url, 'POST', '/api/webhooks', {
          token: shop.token,
          body: { Url: receiver.url, Events: ['order.paid'], Description: 'works' },
        });
        assert.equal(created.status, 201, created.text);
        endpoint = created.json.Id as string;
      });
      after(async () => {
        await receiver?.close();
        await server?.close();
      });

      const testEvent = async () => {
        const sent = await call(server.url, 'POST', `/api/webhooks/${endpoint}/test-events`, {
          token: shop.token,
          body: { Type: 'order.paid' },
        });
        assert.equal(sent.status, 202, sent.text);
        return sent.json.Id as string;
      };

      for (const [path, label] of [
        ['/console/deliveries', 'Endpoint ID'],
        ['/console/events', 'Order ID'],
      ] as const) {
        test(`${path}: the event catalogue arriving late keeps what the user typed`, async () => {
          const admin = await createAdmin(server);
          const cp = await openConsolePage(browser);
          const { page } = cp;
          await onPage(cp, async () => {
            const openapi = await hold(page, (r) => isGet(r, /^\/openapi\.json$/));
            await signInToConsole(page, server, admin, path);
            await openapi.waitFor(/\/openapi\.json$/);
            await page.getByLabel(label).fill('4711');
            await openapi.releaseAll();
            // The catalogue has arrived once its types are options of the type filter.
            await page
              .getByLabel('Event type')
              .locator('option', { hasText: 'order.paid' })
              .waitFor({ state: 'attached' });
            assert.equal(await page.getByLabel(label).inputValue(), '4711', 'the typed filter survives');
          });
        });
      }

      test('portal deliveries: a slow answer for the delivery opened before never replaces the one open now', async () => {
        const first = await testEvent();
        const second = await testEvent();
        const cp = await openPortalByLink(browser, server, shop);
        const { page } = cp;
        await onPage(cp, async () => {
          await page.addInitScript({ content: RECORD_JSON_READS });
          const slow = await hold(page, (r) => isGet(r, new RegExp(`/webhooks/deliveries/${first}$`)));
          await page.goto(`${server.url}/console/portal/deliveries?endpoint_id=${endpoint}`);
          const log = page.locator('table', { hasText: 'Deliveries to this endpoint' });
          await log.getByRole('link', { name: first }).click();
          const firstAnswer = await slow.waitFor(new RegExp(first));
          await log.getByRole('link', { name: second }).click();
          await page.getByRole('heading', { name: `Delivery ${second}` }).waitFor();
          await slow.release(firstAnswer);
          await answerRead(page, `/webhooks/deliveries/${first}`);
          const headings = await page.getByRole('heading', { name: /^Delivery (?!log$)/ }).allTextContents();
          assert.deepEqual(headings, [`Delivery ${second}`], `the delivery shown: ${headings.join(' | ')}`);
          await slow.releaseAll();
        });
      });

      test('portal test event: a poll of the first delivery in flight never overwrites the second', async () => {
        const cp = await openPortalByLink(browser, server, shop);
        const { page } = cp;
        await onPage(cp, async () => {
          await page.addInitScript({ content: RECORD_JSON_READS });
          const polls = await hold(page, (r) => isGet(r, /\/console\/api\/webhooks\/deliveries\/[^/]+$/));
          await page.goto(`${server.url}/console/portal/test`);
          await page.getByLabel('Endpoint').selectOption(endpoint);
          await page.getByLabel('Event type').selectOption('order.paid');
          const notice = page.getByRole('status').filter({ hasText: 'queued as delivery' });
          const sentId = async () => /queued as delivery (\S+?):/.exec((await notice.textContent()) ?? '')?.[1];

          await page.getByRole('button', { name: 'Send test event' }).click();
          await notice.waitFor();
          const first = await sentId();
          const firstPoll = await polls.waitFor(new RegExp(`/deliveries/${first}$`));
          await page.getByRole('button', { name: 'Send test event' }).click();
          await notice.filter({ hasNotText: String(first) }).waitFor();
          const second = await sentId();
          assert.ok(second && second !== first, `two deliveries: ${first}, ${second}`);

          await polls.release(firstPoll);
          await answerRead(page, `/deliveries/${first}`);
          assert.equal(await sentId(), second, `the notice: ${await notice.textContent()}`);
          await polls.releaseAll();
        });
      });

      test('a double click on Create makes one user and one client', async () => {
        const admin = await createAdmin(server);
        const cp = await openConsolePage(browser);
        const { page } = cp;
        const posts: string[] = [];
        page.on('request', (r) => {
          if (r.method() === 'POST') posts.push(new URL(r.url()).pathname);
        });
        const email = `twice-${Date.now()}@example.test`;
        const name = `Twice ${Date.now()}`;
        await onPage(cp, async () => {
          await signInToConsole(page, server, admin, '/console/users');
          const user = page.getByRole('region', { name: 'Create a user' });
          await user.getByLabel('E-mail').fill(email);
          await user.getByLabel('Name').fill('Twice');
          await user.getByLabel('Password').fill('double click 1');
          await user.getByRole('button', { name: 'Create user' }).dblclick();
          await page
            .getByRole('status')
            .filter({ hasText: `User ${email} created.` })
            .waitFor();
          await page.getByRole('cell', { name: email, exact: true }).waitFor();

          await page.getByRole('link', { name: 'Clients', exact: true }).click();
          const client = page.getByRole('region', { name: 'Create a client' });
          await client.getByLabel('Name').fill(name);
          await client.getByLabel('authorization_code').uncheck();
          await client.getByLabel('refresh_token').uncheck();
          await client.getByLabel('client_credentials').check();
          await client.getByLabel('Scopes').fill('orders:read');
          await client.getByRole('button', { name: 'Create client' }).dblclick();
          await page
            .getByRole('status')
            .filter({ hasText: `Client ${name} created.` })
            .waitFor();
          await page.getByRole('cell', { name, exact: true }).first().waitFor();

          const creates = posts.filter((p) => /^\/console\/api\/admin\/(users|clients)$/.test(p));
          assert.deepEqual(creates, ['/console/api/admin/users', '/console/api/admin/clients'], creates.join(', '));
          assert.equal(await page.getByRole('cell', { name, exact: true }).count(), 1, 'one client row');
        });
      });

      test('a slow create still reloads the list after another change reloaded it', async () => {
        const admin = await createAdmin(server);
        const other = await createPlainUser(server);
        const cp = await openConsolePage(browser);
        const { page } = cp;
        const email = `slow-${Date.now()}@example.test`;
        await onPage(cp, async () => {
          const creates = await hold(
            page,
            (r) => r.method() === 'POST' && new URL(r.url()).pathname === '/console/api/admin/users',
          );
          await signInToConsole(page, server, admin, '/console/users');
          const create = page.getByRole('region', { name: 'Create a user' });
          await create.getByLabel('E-mail').fill(email);
          await create.getByLabel('Name').fill('Slow');
          await create.getByLabel('Password').fill('slow create 1');
          await create.getByRole('button', { name: 'Create user' }).click();
          await creates.waitFor(/\/admin\/users$/);

          // Meanwhile another change reloads the list (the page's reload key moves on).
          await page.getByRole('button', { name: `Edit ${other.email}` }).click();
          const edit = page.getByRole('region', { name: `Edit ${other.email}` });
          await edit.getByLabel('Name').fill('Renamed meanwhile');
          await edit.getByRole('button', { name: 'Save changes' }).click();
          await page.getByRole('status').filter({ hasText: 'Changes saved.' }).waitFor();
          await page.getByRole('cell', { name: 'Renamed meanwhile', exact: true }).waitFor();

          await creates.releaseAll();
          await page
            .getByRole('status')
            .filter({ hasText: `User ${email} created.` })
            .waitFor();
          await page.getByRole('cell', { name: email, exact: true }).waitFor();
        });
      });

      test('without the Clipboard API (not a secure context) the secret is selected for Ctrl+C', async () => {
        const admin = await createAdmin(server);
        const cp = await openConsolePage(browser);
        const { page } = cp;
        const name = `No clipboard ${Date.now()}`;
        await onPage(cp, async () => {
          // navigator.clipboard exists only in a secure context; http://127.0.0.1 is one, so take it away.
          await page.addInitScript({
            content: `Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined, configurable: true });`,
          });
          await signInToConsole(page, server, admin, '/console/clients');
          const create = page.getByRole('region', { name: 'Create a client' });
          await create.getByLabel('Name').fill(name);
          await create.getByLabel('authorization_code').uncheck();
          await create.getByLabel('refresh_token').uncheck();
          await create.getByLabel('client_credentials').check();
          await create.getByLabel('Scopes').fill('orders:read');
          await create.getByRole('button', { name: 'Create client' }).click();
          const secret = ((await page.locator('code.secret-value').textContent()) ?? '').trim();
          assert.ok(secret.length > 20, `a secret is shown: ${secret}`);
          await page.getByRole('button', { name: 'Copy secret' }).click();
          await page.getByRole('status').filter({ hasText: 'Press Ctrl+C to copy' }).waitFor();
          assert.equal(await page.evaluate('String(getSelection())'), secret, 'the secret is selected');
        });
      });
    });
  }
}
