// The console's registration tokens (Clients page) in a real browser: an admin scope is refused with the
// API's words, a token is shown once and registers a client, the list shows its state, and a revoked
// token registers nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthTestServer } from '../helpers/auth-server.ts';
import {
  createAdmin,
  describeInBrowser,
  mainText,
  openConsolePage,
  rowWithCell,
  signInToConsole,
} from '../helpers/console.ts';
import { fetchWithin } from '../helpers/http.ts';

async function registerWith(server: AuthTestServer, token: string): Promise<number> {
  const response = await fetchWithin(`${server.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'From the console’s token' }),
  });
  await response.body?.cancel();
  return response.status;
}

describeInBrowser(
  'registration tokens on the Clients page',
  (suite) => {
    test('issue (shown once, never with an admin scope), list with state and uses, revoke', async () => {
      const admin = await createAdmin(suite.server);
      const cp = await openConsolePage(suite.browser);
      const { page } = cp;
      try {
        await signInToConsole(page, suite.server, admin, '/console/clients');
        const section = page.getByRole('region', { name: 'Registration tokens' });
        const form = section.getByRole('form', { name: 'Issue a registration token' });
        await form.getByLabel('Scopes').fill('orders:read admin:read');
        await form.getByRole('button', { name: 'Issue token' }).click();
        await form
          .getByText(/admin:read is never given to a self-registered client/)
          .first()
          .waitFor();

        await form.getByLabel('Scopes').fill('orders:read');
        await form.getByLabel('Description').fill('Partner onboarding');
        await form.getByRole('button', { name: 'Issue token' }).click();
        const shown = section.getByRole('region', { name: /^Registration token rt_/ });
        await shown.waitFor().catch(async (err: Error) => assert.fail(`${err.message}\n${await mainText(page)}`));
        const id = ((await shown.getByRole('heading').textContent()) ?? '').replace('Registration token ', '').trim();
        const token = ((await shown.locator('code.secret-value').textContent()) ?? '').trim();
        assert.match(token, /^[A-Za-z0-9_-]{43}$/);
        await rowWithCell(page, id).getByRole('cell', { name: 'Active' }).waitFor();
        await rowWithCell(page, id).getByRole('cell', { name: '0 of 1' }).waitFor();
        await shown.getByRole('button', { name: 'Done' }).click();
        assert.equal(await registerWith(suite.server, token), 201, 'the token shown registers a client');
        assert.equal(await registerWith(suite.server, token), 401, 'once');

        await form.getByRole('button', { name: 'Issue token' }).click();
        const second = section.getByRole('region', { name: /^Registration token rt_/ });
        await second.waitFor();
        const secondId = ((await second.getByRole('heading').textContent()) ?? '')
          .replace('Registration token ', '')
          .trim();
        const secondToken = ((await second.locator('code.secret-value').textContent()) ?? '').trim();
        await second.getByRole('button', { name: 'Done' }).click();
        await rowWithCell(page, id).getByRole('cell', { name: 'Used up' }).waitFor();
        await rowWithCell(page, id).getByRole('cell', { name: '1 of 1' }).waitFor();

        await page.getByRole('button', { name: `Revoke ${secondId}` }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
        await section
          .getByRole('status')
          .filter({ hasText: `Registration token ${secondId} revoked.` })
          .waitFor();
        await rowWithCell(page, secondId).getByRole('cell', { name: 'Revoked' }).waitFor();
        assert.equal(await registerWith(suite.server, secondToken), 401, 'a revoked token registers nothing');
        assert.ok(!(await mainText(page)).includes(token), 'the token is not shown again');
        cp.assertClean();
      } finally {
        await cp.close();
      }
    });
  },
  { dialects: ['sqlite'], env: { DYNAMIC_REGISTRATION: 'true' } },
);
