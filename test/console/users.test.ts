// The console's Users page in a real browser: list, create, edit name / e-mail / roles, set a password,
// disable and enable, delete (each destructive action confirmed in a dialog), asserting what the page shows
// and, where the page cannot show it, what the API then answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  confirm,
  describeInBrowser,
  rowWithCell,
  createAdmin,
  fillLoginForm,
  mainText,
  openConsolePage,
  signInToConsole,
} from '../helpers/console.ts';

describeInBrowser('the Users page in a real browser', (suite) => {
  test('create, edit, set a password, disable, enable and delete a user', async () => {
    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    const { page } = cp;
    const email = `grace-${Date.now()}@example.test`;
    try {
      await signInToConsole(page, suite.server, admin, '/console/users');
      await rowWithCell(page, admin.email).waitFor();

      // Create
      const create = page.getByRole('region', { name: 'Create a user' });
      await create.getByLabel('E-mail').fill(email);
      await create.getByLabel('Name').fill('Grace Hopper');
      await create.getByLabel('Password').fill('first password 1');
      await create.getByRole('button', { name: 'Create user' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `User ${email} created.` })
        .waitFor();
      await rowWithCell(page, email).waitFor();
      assert.match((await rowWithCell(page, email).textContent()) ?? '', /Grace Hopper.*none.*Active/);

      // A taken address: the problem's detail on the page
      await create.getByLabel('E-mail').fill(email);
      await create.getByLabel('Name').fill('Again');
      await create.getByLabel('Password').fill('first password 1');
      await create.getByRole('button', { name: 'Create user' }).click();
      await create.getByRole('alert').waitFor();
      assert.match((await create.getByRole('alert').textContent()) ?? '', /e-mail|exists|taken/i);

      // Edit name and roles
      await page.getByRole('button', { name: `Edit ${email}` }).click();
      const edit = page.getByRole('region', { name: `Edit ${email}` });
      await edit.getByLabel('Name').fill('Rear Admiral Hopper');
      await edit.getByLabel('Administrator (admin role)').check();
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await edit.getByRole('status').filter({ hasText: 'Changes saved.' }).waitFor();
      await rowWithCell(page, email).filter({ hasText: 'Rear Admiral Hopper' }).waitFor();
      assert.match((await rowWithCell(page, email).textContent()) ?? '', /Rear Admiral Hopper.*admin.*Active/);

      // Set a password
      await edit.getByLabel('New password').fill('second password 2');
      await edit.getByRole('button', { name: 'Set password' }).click();
      await edit.getByRole('status').filter({ hasText: 'Password set.' }).waitFor();

      // Disable (confirmed), then enable
      await edit.getByRole('button', { name: 'Disable user' }).click();
      await confirm(page, 'Disable user');
      await edit.getByRole('status').filter({ hasText: 'User disabled.' }).waitFor();
      await rowWithCell(page, email).filter({ hasText: 'Disabled' }).waitFor();
      await edit.getByRole('button', { name: 'Enable user' }).click();
      await edit.getByRole('status').filter({ hasText: 'User enabled.' }).waitFor();
      await rowWithCell(page, email).filter({ hasText: 'Active' }).waitFor();

      // The new password works, in a browser of its own
      const other = await openConsolePage(suite.browser);
      try {
        await other.page.goto(`${suite.server.url}/console`);
        await fillLoginForm(other.page, { id: '', email, name: 'x', password: 'second password 2' });
        await other.page.getByRole('banner').getByText('Rear Admiral Hopper').waitFor();
        other.assertClean();
      } finally {
        await other.close();
      }

      // Cancel keeps the user; Delete (confirmed) removes it
      await edit.getByRole('button', { name: 'Delete user' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      assert.equal(await rowWithCell(page, email).count(), 1, await mainText(page));
      await edit.getByRole('button', { name: 'Delete user' }).click();
      await confirm(page, 'Delete user');
      await page
        .getByRole('status')
        .filter({ hasText: `User ${email} deleted.` })
        .waitFor();
      await rowWithCell(page, email).waitFor({ state: 'detached' });
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });

  test('the list pages through the server', async () => {
    const admin = await createAdmin(suite.server);
    for (let i = 0; i < 21; i += 1) await suite.server.createUser({ name: `Paged ${i}` });
    const cp = await openConsolePage(suite.browser);
    try {
      await signInToConsole(cp.page, suite.server, admin, '/console/users');
      const rows = cp.page.getByRole('table').getByRole('row');
      await rows.nth(1).waitFor();
      assert.equal(await rows.count(), 21, 'a header and 20 users');
      const first = await rows.nth(1).textContent();
      await cp.page.getByRole('button', { name: 'Next page' }).click();
      await cp.page.getByRole('button', { name: 'Previous page' }).and(cp.page.locator(':enabled')).waitFor();
      assert.notEqual(await rows.nth(1).textContent(), first, 'another page');
      assert.ok(cp.requests.some((u) => u.includes('/console/api/admin/users?') && u.includes('cursor=')));
      await cp.page.getByRole('button', { name: 'Previous page' }).click();
      await cp.page.getByRole('button', { name: 'Previous page' }).and(cp.page.locator(':disabled')).waitFor();
      assert.equal(await rows.nth(1).textContent(), first);
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });
});
