// Console sign-out ends the Signet session, always (docs/guides/portal.md, "Signing out"; docs/security.md):
// the console ends it server-side with its ID token as the hint (RP-Initiated Logout 1.0 §2) before it
// answers, so no confirmation page is shown, and a browser that never gets or follows the answer (a
// closed tab) is signed out of Signet all the same: /console/login asks for the password again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthTestServer } from '../helpers/auth-server.ts';
import { createAdmin, describeInBrowser, signInToConsole, withPage, WAIT_MS } from '../helpers/console.ts';
import { waitUntil } from '../helpers/deadline.ts';

/** The authorization server's sessions of this user (oidc-provider's Session rows in its adapter table). */
async function signetSessions(server: AuthTestServer, userId: string): Promise<number> {
  const rows = await server.app.database.db
    .selectFrom('oidc_payloads')
    .select('id')
    .where('model', '=', 'Session')
    .where('account_id', '=', userId)
    .execute();
  return rows.length;
}

describeInBrowser('console sign-out ends the Signet session', (suite) => {
  test('sign-out lands signed out with no confirmation page, and the next sign-in asks for the password', async () => {
    const admin = await createAdmin(suite.server);
    await withPage(suite.browser, async (cp) => {
      await signInToConsole(cp.page, suite.server, admin, '/console/users');
      assert.equal(await signetSessions(suite.server, admin.id), 1, 'signed in to Signet');
      await cp.page.getByRole('button', { name: 'Sign out' }).click();
      await cp.page.waitForURL(`${suite.server.url}/console/signed-out`);
      await cp.page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      assert.ok(
        !cp.requests.some((url) => url.includes('/oauth/session/end')),
        `the browser was never sent to a confirmation: ${cp.requests.join('\n')}`,
      );
      assert.equal(await signetSessions(suite.server, admin.id), 0, 'the Signet session is gone');
      await cp.page.goto(`${suite.server.url}/console/login`);
      await cp.page.getByLabel('Password').waitFor();
      assert.match(cp.page.url(), /\/oauth\/interaction\//, 'Signet asks for the password again');
    });
  });

  test('a tab closed before the sign-out’s answer arrives is signed out of Signet all the same', async () => {
    const admin = await createAdmin(suite.server);
    await withPage(suite.browser, async (cp) => {
      await signInToConsole(cp.page, suite.server, admin);
      let answered = false;
      // The request reaches the server; its answer never reaches the page (as when the tab is closed).
      await cp.context.route('**/console/logout', async (route) => {
        await route.fetch({ maxRedirects: 0 });
        answered = true;
        await route.abort();
      });
      await cp.page.getByRole('button', { name: 'Sign out' }).click();
      await waitUntil(
        () => answered,
        WAIT_MS,
        () => 'the sign-out reached the server',
      );
      await cp.page.close();
      assert.equal(await signetSessions(suite.server, admin.id), 0, 'the Signet session is gone');
      // A new tab in the same browser (same cookies): no silent sign-in.
      const page = await cp.context.newPage();
      await page.goto(`${suite.server.url}/console/login`);
      await page.getByLabel('Password').waitFor();
      assert.match(page.url(), /\/oauth\/interaction\//, 'Signet asks for the password again');
      // The context's request API sends the browser's cookies (the interaction page's CSP allows no fetch).
      const answer = await cp.context.request.get(`${suite.server.url}/console/session`);
      const session = (await answer.json()) as { signed_in: boolean };
      assert.equal(session.signed_in, false);
      cp.problems.splice(0); // the aborted navigation is this test's own doing
    });
  });
});
