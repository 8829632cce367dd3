// The console's webhook endpoints across clients on the admin API in a real browser (docs/guides/portal.md): filter
// by client, a detail page with stats, disable and enable. Endpoints are registered through the API; every
// action is driven on the page as an admin, and what the page shows is checked, then what the API answers.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import { asAdmin, confirm, describeInBrowser, rowWithText, waitForStatus } from '../helpers/console.ts';
import { adminApi, type AdminApi } from '../helpers/console-seed.ts';
import { expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { clientToken } from '../helpers/portal.ts';
import { registerEndpoint } from '../helpers/webhook-receiver.ts';

describeInBrowser('the webhook endpoints pages in a real browser', (suite) => {
  let api: AdminApi;
  before(async () => {
    api = await adminApi(suite.server);
  });
  const get = (path: string) => api.get(path);

  test('webhook endpoints: every client’s, filtered by client, a detail page, disable and enable', async () => {
    const alpha = await clientToken(suite.server, 'webhooks:manage');
    const beta = await clientToken(suite.server, 'webhooks:manage');
    const register = async (owner: { token: string }, url: string) =>
      (await registerEndpoint(suite.server, owner.token, url)).json.Id as string;
    const alphaUrl = `https://alpha.example/hooks/${Date.now()}`;
    const betaUrl = `https://beta.example/hooks/${Date.now()}`;
    await register(alpha, alphaUrl);
    const betaId = await register(beta, betaUrl);

    await asAdmin(suite, '/console/webhook-endpoints', async (page) => {
      await rowWithText(page, alphaUrl).waitFor();
      await rowWithText(page, betaUrl).waitFor();
      await expectNoSeriousA11yViolations(page, 'webhook endpoints');

      // Filter by client: only beta's; the filter is in the URL and survives a reload.
      await page.getByLabel('Client ID').fill(beta.clientId);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.getByRole('table', { name: `Webhook endpoints of ${beta.clientId}` }).waitFor();
      await rowWithText(page, betaUrl).waitFor();
      assert.equal(await rowWithText(page, alphaUrl).count(), 0, 'alpha’s endpoint is filtered out');
      assert.equal(new URL(page.url()).searchParams.get('client_id'), beta.clientId);
      await page.reload();
      await rowWithText(page, betaUrl).waitFor();
      assert.equal(await page.getByLabel('Client ID').inputValue(), beta.clientId);
      assert.equal(await rowWithText(page, alphaUrl).count(), 0);

      // A client without endpoints: the empty state.
      await page.getByLabel('Client ID').fill('client-without-endpoints');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.getByText('Client client-without-endpoints has no webhook endpoints.').waitFor();
      await page.goBack();
      await rowWithText(page, betaUrl).waitFor();

      // The detail page.
      await page.getByRole('link', { name: betaUrl }).click();
      await page.waitForURL(`${suite.server.url}/console/webhook-endpoints/${betaId}`);
      const state = page.locator('dl.details dt:text-is("State") + dd');
      assert.equal(await state.textContent(), 'Enabled');
      const stats = page.getByRole('table', { name: new RegExp(`Client ${beta.clientId}`) });
      await stats.waitFor();
      assert.match((await rowWithText(stats, 'Attempts succeeded').textContent()) ?? '', /0/);
      const log = page.getByRole('link', { name: 'Delivery log of this endpoint' });
      assert.equal(await log.getAttribute('href'), `/console/deliveries?endpoint_id=${betaId}`);
      await expectNoSeriousA11yViolations(page, 'a webhook endpoint');

      // Disable (confirmed), then enable; the page and the API agree each time.
      await page.getByRole('button', { name: 'Disable endpoint' }).click();
      assert.match(await confirm(page, 'Disable endpoint'), /Nothing more is sent/);
      await waitForStatus(page, 'Endpoint disabled');
      assert.equal(await state.textContent(), 'Disabled (by an admin)');
      let read = await get(`/api/admin/webhook-endpoints/${betaId}`);
      assert.equal(read.Enabled, false, JSON.stringify(read));
      assert.equal(read.DisabledReason, 'admin', JSON.stringify(read));
      await page.getByRole('button', { name: 'Enable endpoint' }).click();
      await waitForStatus(page, 'Endpoint enabled');
      assert.equal(await state.textContent(), 'Enabled');
      read = await get(`/api/admin/webhook-endpoints/${betaId}`);
      assert.equal(read.Enabled, true, JSON.stringify(read));

      // An endpoint that does not exist: the problem's detail.
      const missing = await call(suite.server.url, 'GET', '/api/admin/webhook-endpoints/whep_missing', {
        token: api.token,
      });
      expectStatus(missing, 404, 'an unknown endpoint');
      await page.goto(`${suite.server.url}/console/webhook-endpoints/whep_missing`);
      await page.getByRole('alert').filter({ hasText: missing.json.detail }).waitFor();
    });
  });
});
