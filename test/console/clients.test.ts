// The console's Clients page in a real browser: create (the secret shown once, with a copy button and a
// warning), edit, rotate the secret, delete (destructive actions confirmed), asserting what the page shows;
// the secrets shown are checked against the token endpoint, the copy against the clipboard.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthTestServer } from '../helpers/auth-server.ts';
import type { Page } from 'playwright-core';
import {
  describeInBrowser,
  rowWithCell,
  createAdmin,
  createPlainUser,
  mainText,
  openConsolePage,
  signInToConsole,
} from '../helpers/console.ts';
import { fetchWithin } from '../helpers/http.ts';

/** Whether `secret` authenticates the client (a client-credentials token request). */
async function secretWorks(server: AuthTestServer, clientId: string, secret: string): Promise<boolean> {
  const response = await fetchWithin(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
  });
  await response.body?.cancel();
  return response.status === 200;
}

async function shownSecret(page: Page): Promise<string> {
  const box = page.getByRole('region', { name: /Client secret of/ });
  await box.waitFor();
  assert.match((await box.textContent()) ?? '', /shown only this once/);
  return ((await box.locator('code.secret-value').textContent()) ?? '').trim();
}

describeInBrowser('the Clients page in a real browser', (suite) => {
  test('create a client and see its secret once, edit it, rotate the secret, delete it', async () => {
    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    const { page } = cp;
    const name = `Billing robot ${Date.now()}`;
    await cp.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: suite.server.url });
    try {
      await signInToConsole(page, suite.server, admin, '/console/clients');
      // The built-in console client is listed like any other.
      await rowWithCell(page, 'Signet console').waitFor();

      const create = page.getByRole('region', { name: 'Create a client' });
      await create.getByLabel('Name').fill(name);
      await create.getByLabel('authorization_code').uncheck();
      await create.getByLabel('refresh_token').uncheck();
      await create.getByLabel('client_credentials').check();
      await create.getByLabel('Scopes').fill('orders:read');
      await create.getByRole('button', { name: 'Create client' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Client ${name} created.` })
        .waitFor();
      const secret = await shownSecret(page);
      await rowWithCell(page, name).waitFor();
      const clientId = ((await rowWithCell(page, name).locator('code').textContent()) ?? '').trim();
      assert.match(clientId, /^cl_/);
      assert.ok(await secretWorks(suite.server, clientId, secret), 'the secret shown authenticates the client');

      await page.getByRole('button', { name: 'Copy secret' }).click();
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
      await page.getByRole('button', { name: 'Done' }).click();
      assert.equal(await page.getByRole('region', { name: /Client secret of/ }).count(), 0, 'gone for good');

      // A rule the API enforces: its detail on the page
      await create.getByLabel('Name').fill('No grants');
      for (const grant of ['authorization_code', 'refresh_token', 'client_credentials'])
        await create.getByLabel(grant).uncheck();
      await create.getByRole('button', { name: 'Create client' }).click();
      await create.getByRole('alert').waitFor();
      assert.match((await create.getByRole('alert').textContent()) ?? '', /grant_types/);

      // Edit
      await page.getByRole('button', { name: `Edit ${name}` }).click();
      const edit = page.getByRole('region', { name: `Edit ${name}` });
      await edit.getByLabel('Name').fill(`${name} v2`);
      await edit.getByLabel('Scopes').fill('orders:read orders:write');
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await edit.getByRole('status').filter({ hasText: 'Changes saved.' }).waitFor();
      await rowWithCell(page, `${name} v2`).waitFor();
      const renamed = page.getByRole('region', { name: `Edit ${name} v2` });

      // Rotate (confirmed): a new secret shown once; the old one stops working
      await renamed.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      const rotated = await shownSecret(page);
      assert.notEqual(rotated, secret);
      assert.ok(await secretWorks(suite.server, clientId, rotated), 'the new secret works');
      assert.equal(await secretWorks(suite.server, clientId, secret), false, 'the old secret no longer works');

      // Delete (confirmed)
      await renamed.getByRole('button', { name: 'Delete client' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete client' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Client ${name} v2 deleted.` })
        .waitFor();
      await rowWithCell(page, `${name} v2`).waitFor({ state: 'detached' });
      assert.equal(await secretWorks(suite.server, clientId, rotated), false, 'a deleted client gets no token');
      assert.doesNotMatch(await mainText(page), new RegExp(clientId));
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });

  test('a client gets an owner when created, changes owner, refuses an unknown address, and loses its owner', async () => {
    const admin = await createAdmin(suite.server);
    const owner = await createPlainUser(suite.server);
    const next = await createPlainUser(suite.server);
    const cp = await openConsolePage(suite.browser);
    const { page } = cp;
    const name = `Owned robot ${Date.now()}`;
    const ownerOf = async (clientId: string): Promise<unknown> =>
      (
        await suite.server.app.database.db
          .selectFrom('oauth_clients')
          .select('owner_id')
          .where('id', '=', clientId)
          .executeTakeFirstOrThrow()
      ).owner_id;
    try {
      await signInToConsole(page, suite.server, admin, '/console/clients');
      const create = page.getByRole('region', { name: 'Create a client' });
      await create.getByLabel('Name').fill(name);
      await create.getByLabel('authorization_code').uncheck();
      await create.getByLabel('refresh_token').uncheck();
      await create.getByLabel('client_credentials').check();
      await create.getByLabel('Scopes').fill('webhooks:manage');
      await create.getByLabel('Owner').fill(owner.email);
      await create.getByRole('button', { name: 'Create client' }).click();
      await page
        .getByRole('button', { name: 'Done' })
        .click()
        .catch(async (err: Error) => assert.fail(`${err.message}\n${await mainText(page)}`));
      await rowWithCell(page, name).getByRole('cell', { name: owner.email }).waitFor();
      const clientId = ((await rowWithCell(page, name).locator('code').textContent()) ?? '').trim();
      assert.equal(await ownerOf(clientId), owner.id);

      await page.getByRole('button', { name: `Edit ${name}` }).click();
      const edit = page.getByRole('region', { name: `Edit ${name}` });
      assert.equal(await edit.getByLabel('Owner').inputValue(), owner.email);
      await edit.getByLabel('Owner').fill('nobody-here@example.test');
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await edit
        .getByText(/no user has/i)
        .first()
        .waitFor();
      assert.equal(await ownerOf(clientId), owner.id, 'a refused change changes nothing');

      await edit.getByLabel('Owner').fill(next.email);
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await edit.getByRole('status').filter({ hasText: 'Changes saved.' }).waitFor();
      await rowWithCell(page, name).getByRole('cell', { name: next.email }).waitFor();
      assert.equal(await ownerOf(clientId), next.id);

      await edit.getByLabel('Owner').fill('');
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await rowWithCell(page, name).getByRole('cell', { name: '—' }).waitFor();
      assert.equal(await ownerOf(clientId), null);
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });
});
