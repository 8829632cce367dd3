// Every console page is keyboard-operable (docs/guides/portal.md): every action can be done with the keyboard. One real
// flow with keys only (Tab, Shift+Tab, Enter, Space, Escape; no click): the nav leads to Users and focus lands on the
// page's heading; a user is created; the delete confirmation is opened and cancelled with Escape (focus goes
// back to the button), then opened again and confirmed with Enter; the user is gone (the admin API says
// so too). The focused control is visibly marked (a :focus-visible outline).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import {
  describeInBrowser,
  createAdmin,
  mainText,
  openConsolePage,
  signInToConsole,
  withContext,
} from '../helpers/console.ts';
import { waitUntil } from '../helpers/deadline.ts';

/** More Tabs than any page has stops before the wanted control: a missing control fails, never loops. */
const MAX_TABS = 80;

/** What has focus, for assertions and messages (a string: the test code has no DOM types). */
function focused(page: Page): Promise<string> {
  return page.evaluate(`(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return '(body)';
    const name = el.getAttribute('aria-label') || (el.labels && el.labels[0] ? el.labels[0].textContent : '') || el.textContent;
    return el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' "' + (name || '').trim().replace(/\\s+/g, ' ') + '"';
  })()`) as Promise<string>;
}

/** The page's document, typed just enough (the test code is compiled without the DOM's types). */
type WithDocument = { document: { activeElement: unknown } };

function isFocused(locator: Locator): Promise<boolean> {
  return locator.evaluate((el: unknown) => el === (globalThis as unknown as WithDocument).document.activeElement);
}

/** Presses Tab (or Shift+Tab) until `target` has focus. */
async function tabTo(page: Page, target: Locator, what: string, key = 'Tab'): Promise<void> {
  const seen: string[] = [];
  for (let i = 0; i < MAX_TABS; i++) {
    if (await isFocused(target)) return;
    await page.keyboard.press(key);
    seen.push(await focused(page));
  }
  assert.fail(`${key} never reached ${what}; focus went through:\n${seen.join('\n')}`);
}

/** The focused element matches :focus-visible and draws an outline. */
async function expectFocusVisible(page: Page, what: string): Promise<void> {
  const style = (await page.evaluate(`(() => {
    const el = document.activeElement;
    const s = getComputedStyle(el);
    return { visible: el.matches(':focus-visible'), outline: s.outlineStyle + ' ' + s.outlineWidth };
  })()`)) as { visible: boolean; outline: string };
  assert.ok(
    style.visible && !style.outline.startsWith('none') && !style.outline.endsWith(' 0px'),
    `${what}: ${JSON.stringify(style)}`,
  );
}

async function expectFocus(page: Page, target: Locator, what: string): Promise<void> {
  try {
    await waitUntil(
      () => isFocused(target),
      5_000,
      () => `${what} has focus`,
    );
  } catch (error) {
    throw withContext(error, `it is on ${await focused(page)}`);
  }
}

describeInBrowser('the console with the keyboard only', (suite) => {
  test('nav to Users, create a user, cancel a confirmation with Escape, confirm one with Enter', async () => {
    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    const { page } = cp;
    const email = `keys-${Date.now()}@example.test`;
    try {
      await signInToConsole(page, suite.server, admin, '/console');
      const css = (await page.evaluate(
        `[...document.styleSheets].some((s) => [...s.cssRules].some((r) => (r.selectorText || '').includes(':focus-visible')))`,
      )) as boolean;
      assert.ok(css, 'a :focus-visible rule is in the console stylesheet');

      // The first Tab stop is the skip link, then the header and the nav.
      await page.keyboard.press('Tab');
      await expectFocus(page, page.getByRole('link', { name: 'Skip to content' }), 'the skip link');
      await expectFocusVisible(page, 'the skip link');
      const usersLink = page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Users' });
      await tabTo(page, usersLink, 'the Users link of the nav');
      await expectFocusVisible(page, 'the Users link');
      await page.keyboard.press('Enter');
      await page.waitForURL(`${suite.server.url}/console/users`);
      await expectFocus(page, page.getByRole('heading', { level: 1, name: 'Users' }), 'the Users heading');

      // Create a user: type into each field in turn, Space ticks the checkbox, Enter submits.
      await tabTo(page, page.getByLabel('E-mail'), 'the E-mail field');
      await page.keyboard.type(email);
      await page.keyboard.press('Tab');
      await page.keyboard.type('Kim Keys');
      await page.keyboard.press('Tab');
      await page.keyboard.type('keyboard only 123');
      await page.keyboard.press('Tab');
      await expectFocus(page, page.getByLabel('Administrator (admin role)'), 'the admin checkbox');
      await page.keyboard.press('Space');
      assert.equal(await page.getByLabel('Administrator (admin role)').isChecked(), true);
      const create = page.getByRole('button', { name: 'Create user' });
      await tabTo(page, create, 'the Create user button');
      await expectFocusVisible(page, 'the Create user button');
      await page.keyboard.press('Enter');
      const row = page.getByRole('row').filter({ hasText: email });
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', /admin/);

      // Open it, ask to delete it, cancel with Escape: the dialog closes and focus goes back.
      await tabTo(page, page.getByRole('button', { name: `Edit ${email}` }), 'its Edit button');
      await page.keyboard.press('Space');
      const remove = page.getByRole('button', { name: 'Delete user' });
      await tabTo(page, remove, 'the Delete user button');
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: `Delete ${email}?` });
      await dialog.waitFor();
      await expectFocus(page, dialog.getByRole('button', { name: 'Cancel' }), 'Cancel, the safe choice');
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      await expectFocus(page, remove, 'the Delete user button again');
      assert.equal(await row.count(), 1, 'nothing was deleted');

      // Again, and confirm: Shift+Tab from Cancel to the dialog's Delete user button, Enter.
      await page.keyboard.press('Enter');
      await dialog.waitFor();
      const confirm = dialog.getByRole('button', { name: 'Delete user' });
      await tabTo(page, confirm, "the dialog's Delete user button", 'Shift+Tab');
      await expectFocusVisible(page, "the dialog's Delete user button");
      await page.keyboard.press('Enter');
      await page.getByText(`User ${email} deleted.`).waitFor();
      await row.waitFor({ state: 'detached' });
      const users = await suite.server.app.database.db
        .selectFrom('users')
        .select('email')
        .where('email', '=', email)
        .execute();
      assert.deepEqual(users, [], 'the user is deleted');
      cp.assertClean();
    } catch (error) {
      (error as Error).message +=
        `\n--- page (${page.url()}), focus on ${await focused(page)}:\n${await mainText(page)}`;
      throw error;
    } finally {
      await cp.close();
    }
  });
});
