// Customer portals in Chromium (docs/guides/portal.md, "Customer portals", "Ending portals"): a customer's portal
// page lists only that customer's endpoints and cannot reach another customer's from the page; an admin ends a
// portal session from the console's Portals page and that portal stops at its next request.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createAdmin, describeInBrowser, mainText, openConsolePage, signInToConsole } from '../helpers/console.ts';
import { createPortalClient, followPortalLink, issueLink, type PortalClient } from '../helpers/portal.ts';
import { LOCAL_WEBHOOKS_ENV } from '../helpers/webhook-receiver.ts';

/** A call from the page through the proxy, as the app makes it (CSRF header from /console/session). */
function fromPage(page: Page, method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> {
  return page.evaluate(`(async () => {
    const session = await (await fetch('/console/session')).json();
    const response = await fetch(${JSON.stringify(path)}, {
      method: ${JSON.stringify(method)},
      headers: { 'x-signet-console-csrf': session.csrf_token, 'content-type': 'application/json' },
      body: ${body === undefined ? 'undefined' : JSON.stringify(JSON.stringify(body))},
    });
    return { status: response.status, body: await response.text() };
  })()`);
}

describeInBrowser(
  'customer portals in the browser',
  (suite) => {
    let shop: PortalClient;
    before(async () => {
      shop = await createPortalClient(suite.server, 'Corner shop');
    });

    const openCustomerPortal = async (customerId: string, hook: string) => {
      const cp = await openConsolePage(suite.browser);
      await followPortalLink(cp.page, (await issueLink(suite.server, shop.token, customerId)).Url);
      await cp.page.getByRole('link', { name: 'Webhooks of Corner shop' }).waitFor();
      await cp.page.getByRole('banner').getByText(`for customer ${customerId}`).waitFor();
      const created = await fromPage(cp.page, 'POST', '/console/api/webhooks', {
        Url: `http://127.0.0.1:9/${hook}`,
        Events: ['order.created'],
      });
      assert.equal(created.status, 201, created.body);
      return { cp, endpointId: JSON.parse(created.body).Id as string };
    };

    test("a customer's Endpoints page shows only its own endpoints; another customer's answer 404", async () => {
      const first = await openCustomerPortal(randomUUID(), 'customer-one-hook');
      const second = await openCustomerPortal(randomUUID(), 'customer-two-hook');
      await second.cp.page.goto(`${suite.server.url}/console/portal/endpoints`);
      await second.cp.page.getByText('http://127.0.0.1:9/customer-two-hook').waitFor();
      assert.ok(!(await mainText(second.cp.page)).includes('customer-one-hook'), await mainText(second.cp.page));
      for (const [method, path] of [
        ['POST', `/console/api/webhooks/${first.endpointId}/rotate-secret`],
        ['PATCH', `/console/api/webhooks/${first.endpointId}`],
        ['DELETE', `/console/api/webhooks/${first.endpointId}`],
      ] as const) {
        const answer = await fromPage(second.cp.page, method, path, method === 'PATCH' ? { Enabled: false } : {});
        assert.equal(answer.status, 404, `${method} ${path}: ${answer.body}`);
      }
      second.cp.assertClean();
      await first.cp.close();
      await second.cp.close();
    });

    test('an admin ends a portal session on the Portals page; the portal stops at its next request', async () => {
      const customer = await openCustomerPortal(randomUUID(), 'ended-hook');
      const sessionId = (await customer.cp.page.evaluate(
        `fetch('/console/session').then((r) => r.json()).then((s) => s.portal.session_id)`,
      )) as string;
      const admin = await openConsolePage(suite.browser);
      await signInToConsole(admin.page, suite.server, await createAdmin(suite.server), '/console/portals');
      await admin.page.getByRole('button', { name: `End portal session ${sessionId}` }).click();
      await admin.page.getByRole('button', { name: 'End session', exact: true }).click();
      await admin.page.getByText(`Portal session ${sessionId} ended.`).waitFor();
      const after = await fromPage(customer.cp.page, 'GET', '/console/api/webhooks');
      assert.equal(after.status, 401, after.body);
      admin.assertClean();
      await admin.close();
      await customer.cp.close();
    });
  },
  { env: LOCAL_WEBHOOKS_ENV },
);
