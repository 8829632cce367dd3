// axe-core finds no serious or critical violation on any console page. Every route
// of src/console/assets/routes.js (read from the module the browser loads, so a new page is covered
// without touching this file; `:id` filled with seeded ids) is opened as an admin once its data has
// loaded, over real deliveries (one endpoint failing); also Signet’s sign-in page, Signet’s sign-out
// confirmation, the signed-out page, a sign-in that did not finish and the "not allowed"
// state of a user without a role.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import {
  createAdmin,
  createPlainUser,
  describeInBrowser,
  fillLoginForm,
  mainText,
  signInToConsole,
  WAIT_MS,
  withContext,
  withPage,
} from '../helpers/console.ts';
import { adminApi } from '../helpers/console-seed.ts';
import { callExpecting } from '../helpers/http.ts';
import { clientToken, createPortalClient, openPortalByLink, type PortalClient } from '../helpers/portal.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const ENV = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s' };

interface RouteInfo {
  path: string;
  title: string;
  role?: string;
  /** 'portal': needs a portal session; 'portal-entry': the portal's home, for both. */
  area?: string;
}

/** The console's ROUTES as the browser loads them (the module imports browser-only paths). */
function readRoutes(page: Page): Promise<RouteInfo[]> {
  return page.evaluate(
    `import('/console/assets/routes.js').then((m) => m.ROUTES.map((r) => ({ path: r.path, title: r.title, role: r.role, area: r.area })))`,
  ) as Promise<RouteInfo[]>;
}

/** Waits until the page shows `title` as its heading and has nothing left loading. */
async function loaded(page: Page, title: string): Promise<void> {
  await page.getByRole('heading', { level: 1, name: title, exact: true }).waitFor();
  await page.waitForLoadState('networkidle', { timeout: WAIT_MS });
  await page.locator('.loading').first().waitFor({ state: 'detached' });
}

describeInBrowser(
  'axe finds no serious accessibility violation on any console page',
  (suite) => {
    let receiver: TestReceiver;
    /** A seeded id for each kind of `:id` a route may hold, by the path segment before it. */
    const ids: Record<string, string> = {};
    /** A client with two endpoints (one failing) and pinged deliveries, for the portal pages. */
    let shopPortal: PortalClient;

    before(async () => {
      receiver = await startReceiver();
      receiver.answer = (request) =>
        request.url?.endsWith('/down') ? { status: 500, body: 'receiver exploded' } : { status: 200 };
      const ops = await adminApi(suite.server);
      const shop = await clientToken(suite.server, 'webhooks:manage orders:write');
      for (const path of ['ok', 'down'])
        ids['webhook-endpoints'] = (
          await registerEndpoint(suite.server, shop.token, `${receiver.url}/${path}`, ['order.created'])
        ).json.Id;
      const order = { CustomerId: randomUUID(), Total: 12 };
      await callExpecting(suite.server.url, 'POST', '/api/orders', 201, { token: shop.token, body: order }, 'order');
      let deliveries: { Id: string; EventId: string; State: string }[] = [];
      await waitUntil(
        async () => {
          deliveries = (await ops.get('/api/admin/webhook-deliveries?limit=10')).Items;
          return deliveries.length === 2 && deliveries.every((d) => d.State !== 'pending');
        },
        20_000,
        () => `both deliveries settled: ${JSON.stringify(deliveries)}`,
      );
      ids.deliveries = deliveries[0]!.Id;
      ids.events = deliveries[0]!.EventId;
      ids.clients = shop.clientId;

      shopPortal = await createPortalClient(suite.server, 'Corner shop');
      for (const path of ['ok', 'down']) {
        const made = await registerEndpoint(suite.server, shopPortal.token, `${receiver.url}/${path}`, [
          'webhook.ping',
        ]);
        const ping = `/api/webhooks/${made.json.Id}/ping`;
        await callExpecting(suite.server.url, 'POST', ping, 202, { token: shopPortal.token }, 'ping');
      }
    });
    after(async () => {
      await receiver?.close();
    });

    test('every route of routes.js, as an admin, with its data loaded', async (t) => {
      const admin = await createAdmin(suite.server);
      await withPage(suite.browser, async (cp) => {
        await signInToConsole(cp.page, suite.server, admin, '/console');
        const routes = await readRoutes(cp.page);
        assert.ok(routes.length >= 10, `routes.js lists the console's pages: ${JSON.stringify(routes)}`);
        for (const route of routes.filter((r) => r.area !== 'portal')) {
          await t.test(route.path, async () => {
            const path = route.path.replace(/([^/]+)\/:id/, (_all, kind: string) => {
              assert.ok(ids[kind], `no seeded id for ${route.path}: seed one in this test`);
              return `${kind}/${encodeURIComponent(ids[kind])}`;
            });
            await cp.page.goto(`${suite.server.url}${path}`);
            await loaded(cp.page, route.title);
            await expectNoSeriousA11yViolations(cp.page, route.title);
          });
        }
      });
    });

    test('every portal route of routes.js, in a portal session opened by a link', async (t) => {
      const cp = await openPortalByLink(suite.browser, suite.server, shopPortal);
      try {
        const routes = (await readRoutes(cp.page)).filter((r) => r.area === 'portal' || r.area === 'portal-entry');
        assert.ok(routes.length >= 5, `routes.js lists the portal's pages: ${JSON.stringify(routes)}`);
        for (const route of routes)
          await t.test(route.path, async () => {
            assert.doesNotMatch(route.path, /:/, `a portal route with a parameter: seed an id for ${route.path}`);
            await cp.page.goto(`${suite.server.url}${route.path}`);
            await loaded(cp.page, route.title);
            await expectNoSeriousA11yViolations(cp.page, `${route.title} (portal)`);
          });
        cp.assertClean();
      } catch (error) {
        throw withContext(error, `--- page (${cp.page.url()}):\n${await mainText(cp.page)}`);
      } finally {
        await cp.close();
      }
    });

    test("Signet's sign-in page, a sign-in that did not finish, sign-out and signed out", async () => {
      const admin = await createAdmin(suite.server);
      await withPage(suite.browser, async (cp) => {
        const { page } = cp;
        await page.goto(`${suite.server.url}/console`);
        await page.getByLabel('Password').waitFor();
        await expectNoSeriousA11yViolations(page, "Signet's sign-in page");
        await fillLoginForm(page, admin);
        await page.getByRole('banner').getByText(admin.name).waitFor();

        // Signet's sign-out confirmation, as a relying party without an ID token hint reaches it; the
        // console's own sign-out ends the session without it (test/console/sign-out.test.ts).
        await page.goto(`${suite.server.url}/oauth/session/end`);
        await page.getByRole('heading', { name: 'Sign out of Signet?' }).waitFor();
        await expectNoSeriousA11yViolations(page, "Signet's sign-out confirmation");
        await page.goto(`${suite.server.url}/console`);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByRole('heading', { level: 1, name: 'You are signed out' }).waitFor();
        await expectNoSeriousA11yViolations(page, 'the signed-out page');

        await page.goto(`${suite.server.url}/console/callback?code=x&state=not-started-here`);
        await page.getByRole('heading', { level: 1, name: 'Sign-in did not finish' }).waitFor();
        await expectNoSeriousA11yViolations(page, 'a sign-in that did not finish');
        // That page is a 400 on purpose, which Chrome logs; nothing else may be.
        const expected = cp.problems.findIndex((p) => /status of 400 .*\/console\/callback\?/.test(p));
        assert.ok(expected >= 0, cp.problems.join('\n'));
        cp.problems.splice(expected, 1);
      });
    });

    test('a user without the admin role: the home page and the "not allowed" state', async () => {
      const plain = await createPlainUser(suite.server);
      await withPage(suite.browser, async (cp) => {
        await signInToConsole(cp.page, suite.server, plain, '/console');
        await loaded(cp.page, 'Home');
        await expectNoSeriousA11yViolations(cp.page, 'the home page of a user without a role');
        await cp.page.goto(`${suite.server.url}/console/users`);
        await cp.page.getByRole('banner').getByText(plain.name).waitFor();
        await cp.page.getByText('You are not allowed to see this page').waitFor();
        await expectNoSeriousA11yViolations(cp.page, 'the not-allowed state');
      });
    });
  },
  { env: ENV },
);
