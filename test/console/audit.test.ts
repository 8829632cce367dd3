// The console's audit trail on the admin API in a real browser (docs/guides/portal.md): actor, action and time
// filters narrow the list and live in the URL (reload, back and forward); a filter the API refuses shows
// its detail. Entries are recorded in the database as the app records them.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { recordAudit } from '../../src/audit/audit.ts';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import { asAdmin, describeInBrowser, rowWithText } from '../helpers/console.ts';
import { adminApi, type AdminApi } from '../helpers/console-seed.ts';
import { expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';

// Days a month back: recent enough that the app's own retention purge (AUDIT_RETENTION, 365 d), which
// runs on start and may still be running when this test seeds, never removes them.
const DAY = 86_400_000;
const [DAY1, DAY2, DAY3, EMPTY1, EMPTY2] = [33, 32, 31, 40, 39].map((back) =>
  new Date(Date.now() - back * DAY).toISOString().slice(0, 10),
);

describeInBrowser('the audit trail in a real browser', (suite) => {
  let api: AdminApi;
  before(async () => {
    api = await adminApi(suite.server);
  });

  test('audit trail: actor, action and time filters narrow the list and live in the URL', async () => {
    const actor = `seed-operator-${Date.now()}`;
    const db = suite.server.app.database.db;
    for (const [day, action] of [
      [DAY1, 'keys.rotated'],
      [DAY2, 'keys.rotated'],
      [DAY2, 'user.deleted'],
      [DAY3, 'keys.rotated'],
    ] as const)
      await recordAudit(db, {
        actor: { type: 'cli', id: actor },
        action,
        target: { type: 'seed', id: `${action}-${day}` },
        at: new Date(`${day}T12:00:00Z`),
      });

    await asAdmin(suite, '/console/audit', async (page, cp) => {
      // The action select offers exactly the actions the API documents.
      const document = (await (await fetch(`${suite.server.url}/openapi.json`)).json()) as {
        paths: Record<string, { get: { parameters: { name: string; schema: { anyOf: { enum: string[] }[] } }[] } }>;
      };
      const parameter = document.paths['/api/admin/audit']!.get.parameters.find((p) => p.name === 'action')!;
      const documented = parameter.schema.anyOf.flatMap((s) => s.enum);
      const options = page.getByLabel('Action').locator('option');
      await options.nth(documented.length).waitFor({ state: 'attached' }); // read from /openapi.json by the page
      const offered = await options.evaluateAll((options) =>
        options.map((o) => (o as unknown as { value: string }).value),
      );
      assert.deepEqual(offered, ['', ...documented]);

      // Unfiltered: the sign-in of this admin is there, newest first.
      await rowWithText(page, 'signin.succeeded').first().waitFor();
      await expectNoSeriousA11yViolations(page, 'the audit trail');

      // Actor and action.
      await page.getByLabel('Actor').fill(actor);
      await page.getByLabel('Action').selectOption('keys.rotated');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      const table = page.getByRole('table', { name: /filtered by actor, action/ });
      await table.waitFor();
      const targets = async () =>
        (await table.locator('tbody tr').allTextContents()).map((t) => /keys\.rotated-(\S{10})/.exec(t)?.[1]);
      assert.deepEqual(await targets(), [DAY3, DAY2, DAY1]);
      const afterAction = page.url();

      // A time range (local times in the form, RFC 3339 UTC in the URL and the API call).
      await page.getByLabel('Since').fill(`${DAY2}T00:00`);
      await page.getByLabel('Until').fill(`${DAY3}T00:00`);
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByRole('table', { name: /filtered by actor, action, since, until/ }).waitFor();
      const expected = await page.evaluate(
        (days) => days.map((day) => new Date(`${day}T00:00`).toISOString()),
        [DAY2, DAY3],
      );
      const query = new URL(page.url()).searchParams;
      assert.deepEqual(
        [query.get('actor'), query.get('action'), query.get('since'), query.get('until')],
        [actor, 'keys.rotated', ...expected],
      );
      assert.deepEqual(await targets(), [DAY2]);
      assert.ok(
        cp.requests.some(
          (r) => r.includes('/console/api/admin/audit?') && r.includes(`since=${encodeURIComponent(expected[0]!)}`),
        ),
        'the API was asked with the UTC time',
      );

      // Reload keeps every filter, in the form and in the list.
      await page.reload();
      await page.getByRole('table', { name: /filtered by actor, action, since, until/ }).waitFor();
      assert.deepEqual(await targets(), [DAY2]);
      assert.equal(await page.getByLabel('Actor').inputValue(), actor);
      assert.equal(await page.getByLabel('Action').inputValue(), 'keys.rotated');
      assert.equal(await page.getByLabel('Since').inputValue(), `${DAY2}T00:00`);

      // Back: the actor and action filter again; forward: the range again.
      await page.goBack();
      await page.waitForURL(afterAction);
      await page.getByRole('table', { name: /filtered by actor, action$/ }).waitFor();
      assert.equal(await page.getByLabel('Since').inputValue(), '');
      assert.deepEqual(await targets(), [DAY3, DAY2, DAY1]);
      await page.goForward();
      await page.getByRole('table', { name: /since, until/ }).waitFor();
      assert.deepEqual(await targets(), [DAY2]);

      // A range with no entry: the empty state.
      await page.getByLabel('Since').fill(`${EMPTY1}T00:00`);
      await page.getByLabel('Until').fill(`${EMPTY2}T00:00`);
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByText('No audit entry matches these filters.').waitFor();

      // Clear: every filter goes, from the URL too.
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await page.getByRole('table', { name: 'Audit entries, newest first' }).waitFor();
      assert.equal(new URL(page.url()).search, '');
    });
  });

  test('audit trail: a filter the API refuses shows its detail', async () => {
    const refused = await call(suite.server.url, 'GET', '/api/admin/audit?limit=50&since=yesterday', {
      token: api.token,
    });
    expectStatus(refused, 400, 'a since that is not a time');
    assert.ok(refused.json.detail, refused.text);
    await asAdmin(suite, '/console/audit?since=yesterday', async (page) => {
      await page.getByRole('alert').filter({ hasText: refused.json.detail }).waitFor();
    });
  });
});
