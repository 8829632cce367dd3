// The integrator portal's backend-for-frontend in a real browser (docs/guides/portal.md, "Portal links"): a portal link
// opens the portal of its client only, once, within its lifetime, and its token never stays in a URL or in storage;
// an owner reaches the portal of the clients they own and no other; the portal session's client token is
// minted again near its expiry, and sign-out ends the session.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { toDbTime } from '../../src/db/codecs.ts';
import { hashId } from '../../src/console/sessions.ts';
import { hashPortalToken } from '../../src/webhooks/api/portal-links.service.ts';
import {
  createPlainUser,
  describeInBrowser,
  mainText,
  openConsolePage,
  signInToConsole,
  type ConsolePage,
  type TestUser,
} from '../helpers/console.ts';
import { call } from '../helpers/http.ts';
import {
  clientToken,
  createPortalClient,
  followPortalLink,
  issuePortalLink,
  openPortalByLink,
  type PortalClient,
} from '../helpers/portal.ts';
import { LOCAL_WEBHOOKS_ENV, registerEndpoint } from '../helpers/webhook-receiver.ts';

interface Answer {
  status: number;
  type: string;
  body: string;
}

/** A call from the page through the proxy, as the app makes it (CSRF header from /console/session). */
function fromPage(page: Page, method: string, path: string, body?: unknown): Promise<Answer> {
  return page.evaluate(`(async () => {
    const session = await (await fetch('/console/session')).json();
    const response = await fetch(${JSON.stringify(path)}, {
      method: ${JSON.stringify(method)},
      headers: { 'x-signet-console-csrf': session.csrf_token, 'content-type': 'application/json' },
      body: ${body === undefined ? 'undefined' : JSON.stringify(JSON.stringify(body))},
    });
    return { status: response.status, type: response.headers.get('content-type') || '', body: await response.text() };
  })()`);
}

/** The test's own refused POST /console/portal-sessions is logged by Chrome; anything else is a problem. */
function assertCleanBut403(cp: ConsolePage): void {
  const expected = /status of 403 .*\/console\/portal-sessions\)$/;
  assert.deepEqual(
    cp.problems.filter((p) => !expected.test(p)),
    [],
    cp.problems.join('\n'),
  );
}

describeInBrowser(
  'integrator portal: links, owners and sessions',
  (suite) => {
    let shop: PortalClient;
    const endpointOf = (client: PortalClient, id: string) =>
      call(suite.server.url, 'GET', `/api/webhooks/${id}`, { token: client.token });
    const register = async (client: PortalClient, url: string) =>
      (await registerEndpoint(suite.server, client.token, url, ['order.paid'])).json.Id as string;
    let other: PortalClient;
    let otherEndpoint: string;
    let ownerUser: TestUser;

    before(async () => {
      ownerUser = await createPlainUser(suite.server);
      shop = await createPortalClient(suite.server, 'Corner shop', ownerUser.id);
      other = await createPortalClient(suite.server, 'Other shop');
      await register(shop, 'http://127.0.0.1:9/corner-shop-hook');
      otherEndpoint = await register(other, 'http://127.0.0.1:9/other-shop-hook');
    });

    test('a portal link opens the portal of its client only; the token leaves the URL and is stored nowhere', async () => {
      const link = await issuePortalLink(suite.server, shop);
      const token = link.split('/').at(-1)!;
      const cp = await openConsolePage(suite.browser);
      const posted = await followPortalLink(cp.page, link);
      assert.equal(new URL(cp.page.url()).pathname, '/console/portal');
      assert.equal(posted.headers()['referrer-policy'], 'no-referrer');
      await cp.page.getByRole('link', { name: 'Webhooks of Corner shop' }).waitFor();
      const nav = await cp.page.getByRole('navigation', { name: 'Portal' }).textContent();
      for (const item of ['Endpoints', 'Send a test event', 'Deliveries', 'Event catalogue', 'Verify deliveries'])
        assert.ok(nav?.includes(item), `${item} in the nav: ${nav}`);
      assert.ok(!nav?.includes('Users'), nav ?? '');

      await cp.page.getByRole('link', { name: 'Endpoints' }).first().click();
      await cp.page.getByText('http://127.0.0.1:9/corner-shop-hook').waitFor();
      assert.ok(!(await mainText(cp.page)).includes('other-shop-hook'), await mainText(cp.page));

      // The other client's endpoint is not this portal's (reading one endpoint is no call of its pages: 403); nor is
      // any other API, nor a new portal link.
      assert.equal((await fromPage(cp.page, 'GET', `/console/api/webhooks/${otherEndpoint}`)).status, 403);
      assert.equal((await fromPage(cp.page, 'DELETE', `/console/api/webhooks/${otherEndpoint}`)).status, 404);
      assert.equal((await endpointOf(other, otherEndpoint)).status, 200);
      for (const path of ['/console/api/admin/users', '/console/api/me/clients', '/console/api/orders']) {
        const refused = await fromPage(cp.page, 'GET', path);
        assert.equal(refused.status, 403, `${path}: ${refused.body}`);
        assert.match(refused.type, /application\/problem\+json/);
      }
      const chained = await fromPage(cp.page, 'POST', '/console/api/webhooks/portal-links', {});
      assert.equal(chained.status, 403, chained.body);
      // Without the CSRF header: refused.
      const noCsrf = (await cp.page.evaluate(`fetch('/console/api/webhooks').then((r) => r.status)`)) as number;
      assert.equal(noCsrf, 403);

      const urls = cp.requests.filter((url) => url.includes(token));
      // The link's GET (the "Open the portal" page) and its form's POST to the same URL.
      assert.deepEqual(urls, [link, link], 'only the link itself carries the token');
      assert.ok(!cp.page.url().includes(token));
      const storage = (await cp.page.evaluate(
        'JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage), document.cookie])',
      )) as string;
      assert.equal(storage, '[[],[],""]', 'nothing in storage or script-visible cookies');
      const [cookie] = await cp.context.cookies(suite.server.url);
      assert.equal(cookie?.name, 'signet-console-portal');
      assert.equal(cookie?.httpOnly, true);
      assert.equal(cookie?.sameSite, 'Strict');
      cp.assertClean();
      await cp.close();
    });

    test('a link works once; a used or expired link is refused (410), an unknown one is 404; none opens a session', async () => {
      const link = await issuePortalLink(suite.server, shop);
      const cp = await openConsolePage(suite.browser);
      await followPortalLink(cp.page, link);
      await cp.page.getByRole('link', { name: 'Webhooks of Corner shop' }).waitFor();

      const again = await openConsolePage(suite.browser);
      const reused = await again.page.goto(link);
      assert.equal(reused?.status(), 410);
      await again.page.getByText('already used, has expired or was revoked').waitFor();
      const session = (await again.page.evaluate(`fetch('/console/session').then((r) => r.json())`)) as {
        signed_in: boolean;
      };
      assert.equal(session.signed_in, false);

      const expired = await issuePortalLink(suite.server, shop);
      await suite.server.app.database.db
        .updateTable('webhook_portal_links')
        .set({ expires_at: toDbTime(new Date(Date.now() - 1000)) })
        .where('token_hash', '=', hashPortalToken(expired.split('/').at(-1)!))
        .execute();
      assert.equal((await again.page.goto(expired))?.status(), 410);
      await again.page.getByRole('heading', { name: 'This portal link no longer works' }).waitFor();

      const unknown = await again.page.goto(`${suite.server.url}/console/portal-links/${'A'.repeat(43)}`);
      assert.equal(unknown?.status(), 404);
      await again.page.getByRole('heading', { name: 'Unknown portal link' }).waitFor();
      assert.deepEqual(await again.context.cookies(suite.server.url), []);
      await cp.close();
      await again.close();
    });

    test('an owner sees only the clients they own, opens one’s portal, and is refused another’s (403)', async () => {
      const cp = await openConsolePage(suite.browser);
      await signInToConsole(cp.page, suite.server, ownerUser, '/console/portal');
      await cp.page.getByRole('cell', { name: 'Corner shop', exact: true }).waitFor();
      assert.ok(!(await mainText(cp.page)).includes('Other shop'), await mainText(cp.page));

      const refused = await fromPage(cp.page, 'POST', '/console/portal-sessions', { client_id: other.clientId });
      assert.equal(refused.status, 403, refused.body);
      assert.match(refused.type, /application\/problem\+json/);
      const after403 = (await cp.page.evaluate(`fetch('/console/session').then((r) => r.json())`)) as {
        portal?: unknown;
      };
      assert.equal(after403.portal, undefined, 'no portal was opened');
      assert.equal((await fromPage(cp.page, 'GET', `/console/api/webhooks/${otherEndpoint}`)).status, 403);

      await cp.page.getByRole('button', { name: 'Open the portal of Corner shop' }).click();
      await cp.page.waitForURL(`${suite.server.url}/console/portal/endpoints`);
      await cp.page.getByText('http://127.0.0.1:9/corner-shop-hook').waitFor();
      await cp.page.getByRole('banner').getByText(ownerUser.name).waitFor();
      assert.ok(!(await mainText(cp.page)).includes('other-shop-hook'));

      // The owner's portal reads no one's orders through the event feed: it is no call of the portal's pages,
      // so it goes on as the signed-in user, who sees the events of their own orders only.
      const someoneElse = randomUUID();
      const orders = await clientToken(suite.server, 'orders:read orders:write');
      const order = await call(suite.server.url, 'POST', '/api/orders', {
        token: orders.token,
        body: { CustomerId: someoneElse, Total: 1, Currency: 'EUR' },
      });
      assert.equal(order.status, 201, order.text);
      const feed = await fromPage(cp.page, 'GET', '/console/api/events?limit=100');
      assert.ok(!feed.body.includes(someoneElse), `${feed.status} ${feed.body}`);

      // Leaving the portal brings the console back.
      await cp.page.getByRole('link', { name: 'Webhooks of Corner shop' }).click();
      await cp.page.getByRole('button', { name: 'Leave this client’s portal' }).click();
      await cp.page.getByRole('table', { name: 'Your clients' }).waitFor();
      assertCleanBut403(cp);
      await cp.close();
    });

    test('a user who owns no client is shown none and reaches no portal', async () => {
      const stranger = await createPlainUser(suite.server);
      const cp = await openConsolePage(suite.browser);
      await signInToConsole(cp.page, suite.server, stranger, '/console/portal');
      await cp.page.getByText('You own no client').waitFor();
      const refused = await fromPage(cp.page, 'POST', '/console/portal-sessions', { client_id: shop.clientId });
      assert.equal(refused.status, 403, refused.body);
      await cp.page.goto(`${suite.server.url}/console/portal/endpoints`);
      await cp.page.getByRole('alert').waitFor();
      assert.ok(!(await mainText(cp.page)).includes('corner-shop-hook'));
      assertCleanBut403(cp);
      await cp.close();
    });

    test('the client token is minted again near its expiry; sign-out ends a link’s portal session', async () => {
      const cp = await openPortalByLink(suite.browser, suite.server, shop, '/console/portal/endpoints');
      const db = suite.server.app.database.db;
      const [cookie] = await cp.context.cookies(suite.server.url);
      const row = () =>
        db
          .selectFrom('console_portal_sessions')
          .select(['token', 'access_expires_at'])
          .where('id_hash', '=', hashId(cookie!.value))
          .executeTakeFirstOrThrow();
      const before = await row();
      await db
        .updateTable('console_portal_sessions')
        .set({ access_expires_at: toDbTime(new Date(Date.now() + 1000)) })
        .where('id_hash', '=', hashId(cookie!.value))
        .execute();
      const listed = await fromPage(cp.page, 'GET', '/console/api/webhooks');
      assert.equal(listed.status, 200, listed.body);
      const after = await row();
      assert.notEqual(after.token, before.token, 'a new token, sealed');
      assert.ok(!after.token.includes('eyJ'), 'sealed, not a JWT in clear');

      await cp.page.getByRole('button', { name: 'Sign out' }).click();
      await cp.page.getByRole('heading', { name: 'You have left the portal' }).waitFor();
      const session = (await cp.page.evaluate(`fetch('/console/session').then((r) => r.json())`)) as {
        signed_in: boolean;
      };
      assert.equal(session.signed_in, false);
      cp.assertClean();
      await cp.close();
    });
  },
  { env: LOCAL_WEBHOOKS_ENV },
);
