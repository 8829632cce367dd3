// The console's DataTable never shows the rows of the list it showed before: while the list asked for
// (a new filter) is still on its way, the table says it is loading. The API answer is held back in the
// browser (Playwright routing) so the in-between state lasts as long as the test needs, not one frame.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Route } from 'playwright-core';
import { createAdmin, describeInBrowser, mainText, openConsolePage, signInToConsole } from '../helpers/console.ts';
import { withDeadline } from '../helpers/deadline.ts';

describeInBrowser(
  'the console DataTable',
  (suite) => {
    test('a new filter shows Loading, not the previous rows, until its own answer arrives', async () => {
      const admin = await createAdmin(suite.server);
      const other = await createAdmin(suite.server);
      const cp = await openConsolePage(suite.browser);
      const { page } = cp;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      try {
        // Two admins' sign-ins: the audit trail lists both actors.
        await signInToConsole(page, suite.server, other, '/console/audit');
        await page.context().clearCookies();
        await signInToConsole(page, suite.server, admin, '/console/audit');
        const rowsOf = (id: string) => page.getByRole('row').filter({ hasText: id });
        await rowsOf(other.id).first().waitFor();

        let held!: () => void;
        const heldNow = new Promise<void>((resolve) => (held = resolve));
        await page.route(/\/console\/api\/admin\/audit\?.*actor/, async (route: Route) => {
          held();
          await released;
          await route.continue();
        });
        // Every DOM change is checked: the stale state may last a single render, never seen by a poll.
        // (In-page code as a string: the test's TypeScript knows no DOM.)
        await page.evaluate(`new MutationObserver(() => {
          const caption = document.querySelector('main table caption')?.textContent ?? '';
          const rows = [...document.querySelectorAll('main tbody tr')].map((tr) => tr.textContent ?? '');
          if (caption.includes('filtered by') && rows.some((row) => row.includes(${JSON.stringify(other.id)})))
            window.staleSeen = true;
        }).observe(document.body, { subtree: true, childList: true, characterData: true })`);
        await page.getByLabel('Actor').fill(admin.id);
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await withDeadline(heldNow, 10_000, () => 'the filtered list was never asked for');
        await page.getByRole('status').filter({ hasText: 'Loading' }).waitFor();
        assert.equal(await rowsOf(other.id).count(), 0, `old rows shown while loading: ${await mainText(page)}`);
        release();
        await rowsOf(admin.id).first().waitFor();
        assert.equal(await rowsOf(other.id).count(), 0, 'the filtered list has only the chosen actor');
        assert.equal(
          await page.evaluate('window.staleSeen ?? false'),
          false,
          'the previous rows were shown under the new caption',
        );
        cp.assertClean();
      } finally {
        release();
        await cp.close();
      }
    });
  },
  // The page's own requests are held and answered by the test: one dialect is enough.
  { dialects: ['sqlite'] },
);
