// The console's sessions-and-grants and signing-keys pages on the admin API in a real browser (docs/guides/portal.md):
// end a session, revoke a grant per user and per client, rotate the signing keys. Data is seeded through the
// API; every action is driven on the page as an admin, and what the page shows is checked, then what the API
// answers afterwards. A user without the admin role reaches none of the operator pages.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import {
  asAdmin,
  confirm,
  createPlainUser,
  describeInBrowser,
  rowWithText,
  signInToConsole,
  waitForStatus,
  withPage,
} from '../helpers/console.ts';
import { adminApi, type AdminApi } from '../helpers/console-seed.ts';
import { expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { authorizeWithLogin, exchangeCode, tokenFrom } from '../helpers/oauth-requests.ts';

describeInBrowser('the sessions and signing-keys pages in a real browser', (suite) => {
  let api: AdminApi;
  before(async () => {
    api = await adminApi(suite.server);
  });
  const get = (path: string) => api.get(path);

  test('sessions and grants: pick a user, end a session, revoke grants per user and per client', async () => {
    const user = await suite.server.createUser();
    const shop = await suite.server.createClient({ name: 'Shop', scopes: ['openid', 'orders:read'] });
    const crm = await suite.server.createClient({ name: 'CRM', scopes: ['openid', 'orders:read'] });
    for (const client of [shop, crm])
      tokenFrom(
        await exchangeCode(
          suite.server,
          client,
          await authorizeWithLogin(suite.server, client, user, { scope: 'openid' }),
        ),
      );
    const sessions = (await get(`/api/admin/users/${user.id}/sessions`)).Items as { Id: string }[];
    assert.equal(sessions.length, 2, JSON.stringify(sessions));
    const [ended, kept] = sessions.map((s) => s.Id) as [string, string];

    await asAdmin(suite, '/console/sessions', async (page) => {
      // Pick the user by searching their address.
      await page.getByLabel('E-mail contains').fill(user.email);
      await page.getByRole('button', { name: 'Search users' }).click();
      await page.getByRole('button', { name: `Show sessions and grants of ${user.email}` }).click();
      const sessionsPanel = page.getByRole('region', { name: `Sessions of ${user.email}` });
      const grantsPanel = page.getByRole('region', { name: `Grants of ${user.email}` });
      await rowWithText(sessionsPanel, ended).waitFor();
      await rowWithText(sessionsPanel, kept).waitFor();
      await rowWithText(grantsPanel, shop.clientId).waitFor();
      await rowWithText(grantsPanel, crm.clientId).waitFor();
      await expectNoSeriousA11yViolations(page, 'sessions and grants');

      // Cancel leaves the session alone.
      await rowWithText(sessionsPanel, ended)
        .getByRole('button', { name: `End session ${ended}` })
        .click();
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      assert.equal((await get(`/api/admin/users/${user.id}/sessions`)).Items.length, 2);

      // End one session: gone from the list, the other stays; the API agrees.
      await rowWithText(sessionsPanel, ended)
        .getByRole('button', { name: `End session ${ended}` })
        .click();
      assert.match(await confirm(page, 'End session'), /sign in again/);
      await waitForStatus(page, `Session ${ended} of ${user.email} ended`);
      // Gone from the list (the reload settles within the wait's deadline), the other one still there.
      await rowWithText(sessionsPanel, ended).waitFor({ state: 'detached' });
      await rowWithText(sessionsPanel, kept).waitFor();
      const left = (await get(`/api/admin/users/${user.id}/sessions`)).Items as { Id: string }[];
      assert.deepEqual(
        left.map((s) => s.Id),
        [kept],
      );

      // Revoke the Shop grant from the user's list.
      await grantsPanel.getByRole('button', { name: `Revoke grant of ${shop.clientId}` }).click();
      assert.match(await confirm(page, 'Revoke grant'), /refresh tokens/);
      await waitForStatus(page, `Grant to ${shop.clientId} revoked`);
      await rowWithText(grantsPanel, shop.clientId).waitFor({ state: 'detached' });
      await rowWithText(grantsPanel, crm.clientId).waitFor();
      const grants = (await get(`/api/admin/users/${user.id}/grants`)).Items as { ClientId: string }[];
      assert.deepEqual(
        grants.map((g) => g.ClientId),
        [crm.clientId],
      );

      // Revoke the CRM grant from the client's list: the client then has none, and neither has the user.
      const clientSection = page.getByRole('region', { name: 'Grants of a client' });
      await clientSection.getByLabel('Client ID').fill(crm.clientId);
      await clientSection.getByRole('button', { name: 'Show client grants' }).click();
      await clientSection.getByRole('button', { name: `Revoke grant of ${user.id}` }).click();
      await confirm(page, 'Revoke grant');
      await waitForStatus(page, `Grant to ${crm.clientId} revoked`);
      await clientSection.getByText(`No user has granted ${crm.clientId} anything.`).waitFor();
      await grantsPanel.getByText(`${user.email} has granted no client anything.`).waitFor();
      assert.deepEqual((await get(`/api/admin/clients/${crm.clientId}/grants`)).Items, []);

      // The picked user and client are in the URL: a reload shows the same lists.
      const url = new URL(page.url());
      assert.equal(url.searchParams.get('user'), user.id);
      assert.equal(url.searchParams.get('client'), crm.clientId);
      await page.reload();
      await sessionsPanel.getByText(kept).waitFor();
      await clientSection.getByText(`No user has granted ${crm.clientId} anything.`).waitFor();
    });
  });

  test('sessions and grants: empty lists and an unknown user say so', async () => {
    const loner = await suite.server.createUser();
    await asAdmin(suite, `/console/sessions?user=${loner.id}`, async (page) => {
      await page.getByText(`${loner.email} has no signed-in session.`).waitFor();
      await page.getByText(`${loner.email} has granted no client anything.`).waitFor();
      await page.getByLabel('E-mail contains').fill('nobody-has-this-address');
      await page.getByRole('button', { name: 'Search users' }).click();
      await page.getByText('No user’s e-mail contains “nobody-has-this-address”.').waitFor();
    });
    const missing = await call(suite.server.url, 'GET', '/api/admin/users/usr_missing', { token: api.token });
    expectStatus(missing, 404, 'an unknown user');
    await asAdmin(suite, '/console/sessions?user=usr_missing', async (page) => {
      const alert = page.getByRole('alert').filter({ hasText: missing.json.detail });
      await alert.waitFor();
    });
  });

  test('signing keys: listed, rotated (with the keyboard) behind a confirmation, the new key shown pending', async () => {
    const before = (await get('/api/admin/keys')).Items as { Kid: string }[];
    assert.ok(before.length > 0);
    await asAdmin(suite, '/console/keys', async (page) => {
      for (const key of before) await rowWithText(page, key.Kid).waitFor();
      const table = page.getByRole('table', { name: /Signing keys/ });
      assert.match((await table.textContent()) ?? '', /Signing/);
      await expectNoSeriousA11yViolations(page, 'signing keys');

      // Escape backs out: nothing rotated.
      const rotate = page.getByRole('button', { name: 'Rotate keys' });
      await rotate.focus();
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      assert.match(
        (await dialog.textContent()) ?? '',
        /signs new tokens with them after KEY_ROTATION_DELAY.*stay valid until they expire/s,
      );
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal((await get('/api/admin/keys')).Items.length, before.length, 'Escape rotated nothing');

      // Confirm from the keyboard: Cancel has the focus, the confirm button is before it.
      await rotate.focus();
      await page.keyboard.press('Enter');
      await dialog.waitFor();
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'hidden' });
      await waitForStatus(page, 'Keys rotated');
      const after = (await get('/api/admin/keys')).Items as { Kid: string; State: string }[];
      const fresh = after.filter((k) => !before.some((b) => b.Kid === k.Kid));
      assert.ok(fresh.length > 0, `a new key: ${JSON.stringify(after)}`);
      // KEY_ROTATION_DELAY (60 s by default): the new keys are published but do not sign yet.
      for (const key of fresh) assert.match((await rowWithText(page, key.Kid).textContent()) ?? '', /Pending \(new\)/);
      const label: Record<string, RegExp> = { signing: /Signing/, pending: /Pending/, retired: /Retired/ };
      for (const key of before) {
        const now = after.find((k) => k.Kid === key.Kid);
        if (now) assert.match((await rowWithText(page, key.Kid).textContent()) ?? '', label[now.State]!, now.State);
      }
    });
  });

  test('a user without the admin role sees none of these pages', async () => {
    const plain = await createPlainUser(suite.server);
    await withPage(suite.browser, async ({ page }) => {
      await signInToConsole(page, suite.server, plain, '/console/keys');
      const nav = page.getByRole('navigation', { name: 'Console' });
      for (const path of ['/console/sessions', '/console/keys', '/console/webhook-endpoints', '/console/audit']) {
        await page.goto(`${suite.server.url}${path}`);
        await page.getByRole('alert').filter({ hasText: 'not allowed' }).waitFor();
        assert.equal(await nav.locator(`a[href="${path}"]`).count(), 0, `${path} is not in the nav`);
      }
    });
  });
});
