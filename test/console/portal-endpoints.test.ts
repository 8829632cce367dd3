// The integrator portal's Endpoints page in a real browser (docs/guides/portal.md), opened through a portal link:
// add (the secret shown once), a refused URL shown next to its field, rotate, disable, enable and delete,
// each checked against what the webhooks API then answers.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { confirm, describeInBrowser } from '../helpers/console.ts';
import { call } from '../helpers/http.ts';
import { createPortalClient, openPortalByLink, type PortalClient } from '../helpers/portal.ts';
import { LOCAL_WEBHOOKS_ENV, registerEndpoint } from '../helpers/webhook-receiver.ts';

describeInBrowser(
  'integrator portal: the Endpoints page',
  (suite) => {
    let shop: PortalClient;
    let shopEndpoint: string;
    const endpointOf = (client: PortalClient, id: string) =>
      call(suite.server.url, 'GET', `/api/webhooks/${id}`, { token: client.token });
    const register = async (client: PortalClient, url: string) =>
      (await registerEndpoint(suite.server, client.token, url, ['order.paid'])).json.Id as string;

    before(async () => {
      shop = await createPortalClient(suite.server, 'Corner shop');
      shopEndpoint = await register(shop, 'http://127.0.0.1:9/corner-shop-hook');
    });

    test('Endpoints: add (secret shown once), a refused URL next to its field, rotate, disable, enable, delete', async () => {
      const cp = await openPortalByLink(suite.browser, suite.server, shop, '/console/portal/endpoints');
      const { page } = cp;
      await page.getByText('http://127.0.0.1:9/corner-shop-hook').waitFor();

      // A URL the API refuses: its detail appears next to the URL field.
      await page.getByLabel('URL', { exact: true }).fill('ftp://127.0.0.1/hook');
      await page.getByRole('checkbox', { name: /order\.paid/ }).check();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.locator('.field-error').first().waitFor();
      const fieldError = await page.locator('.field', { has: page.getByLabel('URL', { exact: true }) }).textContent();
      assert.match(fieldError ?? '', /http/i, fieldError ?? '');

      await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9/new-hook');
      await page.getByRole('checkbox', { name: /order\.shipped/ }).check();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = page.locator('code.secret-value');
      await secret.waitFor();
      const firstSecret = (await secret.textContent())!;
      assert.match(firstSecret, /^whsec_/);
      await page.getByText('Copy it now: it is shown only this once.').waitFor();
      const listed = (await call(suite.server.url, 'GET', '/api/webhooks', { token: shop.token })).json.Items as {
        Id: string;
        Url: string;
        Events: string[];
        Enabled: boolean;
      }[];
      const added = listed.find((e) => e.Url === 'http://127.0.0.1:9/new-hook');
      assert.deepEqual(added?.Events.sort(), ['order.paid', 'order.shipped']);
      await page.getByRole('button', { name: 'Done' }).click();
      await secret.waitFor({ state: 'detached' });

      await page.getByRole('button', { name: 'Rotate secret of http://127.0.0.1:9/new-hook' }).click();
      await confirm(page, 'Rotate secret');
      await secret.waitFor();
      assert.notEqual(await secret.textContent(), firstSecret);
      assert.match((await secret.textContent())!, /^whsec_/);
      await page.getByRole('button', { name: 'Done' }).click();

      await page.getByRole('button', { name: 'Disable http://127.0.0.1:9/new-hook' }).click();
      await confirm(page, 'Disable');
      await page.getByText('Disabled (manual)').waitFor();
      assert.equal((await endpointOf(shop, added!.Id)).json.Enabled, false);

      await page.getByRole('button', { name: 'Enable http://127.0.0.1:9/new-hook' }).click();
      await page.getByRole('button', { name: 'Disable http://127.0.0.1:9/new-hook' }).waitFor();
      assert.equal((await endpointOf(shop, added!.Id)).json.Enabled, true);

      await page.getByRole('button', { name: 'Delete http://127.0.0.1:9/new-hook' }).click();
      await confirm(page, 'Delete endpoint');
      await page.getByText('http://127.0.0.1:9/new-hook was deleted.').waitFor();
      await page.getByRole('button', { name: 'Delete http://127.0.0.1:9/new-hook' }).waitFor({ state: 'detached' });
      assert.equal((await endpointOf(shop, added!.Id)).status, 404);
      assert.equal((await endpointOf(shop, shopEndpoint)).status, 200);
      cp.assertClean();
      await cp.close();
    });
  },
  { env: LOCAL_WEBHOOKS_ENV },
);
