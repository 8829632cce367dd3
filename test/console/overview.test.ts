// The operator overview on the console's home (docs/guides/portal.md) in a real browser: six uPlot charts drawn
// (canvas with a size) over GET /api/admin/stats, each with a summary sentence and a data table that
// state the numbers seeded into the database; the empty state of a fresh server; Refresh; resizing with
// the window; the error state when the admin's role was taken away and the console's token renewed
// (the API then answers 403, shown from the problem's detail); no overview for a plain user; no CSP
// violation or console error, and no serious axe violation.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { recordAudit } from '../../src/audit/audit.ts';
import { updateUserRow } from '../../src/auth-server/identity/users.repository.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import {
  createAdmin,
  describeInBrowser,
  createPlainUser,
  mainText,
  openConsolePage,
  signInToConsole,
  WAIT_MS,
  type ConsolePage,
  type TestUser,
} from '../helpers/console.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { StatsSeed, type SeededAttempt } from '../helpers/stats-seed.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const CHART_IDS = ['attempts', 'success', 'latency', 'pending', 'tokens', 'signins'].map((id) => `#chart-${id}`);

/** `2026-03-01 10:15Z`, as the data tables show a bucket's start. */
const cellTime = (at: Date) =>
  at
    .toISOString()
    .replace('T', ' ')
    .replace(/:\d\d\.\d+Z$/, 'Z');

/** Ten attempts in one minute: seven 2xx (10 … 70 ms), two timeouts (5 s), one failed status (300 ms). */
function seededAttempts(minute: Date): SeededAttempt[] {
  const at = (n: number) => new Date(minute.getTime() + n * 1000);
  return [
    ...[10, 20, 30, 40, 50, 60, 70].map((durationMs, n) => ({ startedAt: at(n), durationMs, errorKind: null })),
    { startedAt: at(10), durationMs: 5000, errorKind: 'timeout' },
    { startedAt: at(11), durationMs: 5000, errorKind: 'timeout' },
    { startedAt: at(12), durationMs: 300, errorKind: 'status' },
  ];
}

/** The canvas sizes of the six charts, in CSS pixels. */
async function canvasSizes(page: Page): Promise<{ id: string; width: number; height: number }[]> {
  return Promise.all(
    CHART_IDS.map(async (id) => {
      const box = await page.locator(`${id} canvas`).boundingBox();
      return { id, width: box?.width ?? 0, height: box?.height ?? 0 };
    }),
  );
}

async function expectSixCharts(page: Page): Promise<void> {
  for (const id of CHART_IDS) await page.locator(`${id} canvas`).waitFor();
  const sizes = await canvasSizes(page);
  assert.ok(
    sizes.every((s) => s.width > 100 && s.height > 100),
    `every chart has a drawn canvas: ${JSON.stringify(sizes)}`,
  );
  // Each has a heading, a visible legend naming its series, and a data table toggle.
  for (const id of CHART_IDS) {
    const chart = page.locator(id);
    assert.equal(await chart.getByRole('heading', { level: 3 }).count(), 1, `${id} has a heading`);
    assert.ok(await chart.locator('.u-legend').isVisible(), `${id} shows its legend`);
    assert.equal(await chart.locator('details summary').count(), 1, `${id} has a data table toggle`);
  }
}

async function summary(page: Page, id: string): Promise<string> {
  return (await page.locator(`#chart-${id} .chart-summary`).textContent()) ?? '';
}

/** Opens a chart's data table with the keyboard and returns the cells of the row starting with `first`. */
async function tableRow(page: Page, id: string, first: string): Promise<string[]> {
  const chart = page.locator(`#chart-${id}`);
  const toggle = chart.locator('details summary');
  if (!(await chart.locator('details').evaluate('(d) => d.open'))) {
    await toggle.focus();
    await toggle.press('Enter');
  }
  const row = chart.getByRole('row').filter({ hasText: first });
  await row.first().waitFor();
  return row.first().locator('th, td').allTextContents();
}

async function refresh(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Refresh' }).click();
}

describeInBrowser(
  'the operator overview in a real browser',
  (suite) => {
    let admin: TestUser;
    let cp: ConsolePage;
    /** The minute the seeded attempts started in, two hours ago. */
    const minute = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 2 * HOUR);
    /** An hour three hours ago, holding seeded token counts. */
    const tokenHour = new Date(Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR);
    before(async () => {
      admin = await createAdmin(suite.server);
      cp = await openConsolePage(suite.browser);
    });
    after(async () => {
      await cp?.close();
    });

    test('a fresh server: six charts drawn with zeros and an explicit empty state', async () => {
      await signInToConsole(cp.page, suite.server, admin);
      const page = cp.page;
      await page.getByRole('heading', { name: 'Overview of the last 24 hours' }).waitFor();
      await page.getByText('No webhook activity in the last 24 h').waitFor();
      await expectSixCharts(page);
      assert.equal(await summary(page, 'attempts'), 'No webhook attempts in the last 24 h.');
      assert.equal(
        await page.locator('#chart-success .headline-value').textContent(),
        '—',
        'no success rate without attempts',
      );
      assert.match(await summary(page, 'pending'), /^No delivery is pending now\./);
      // The admin's own sign-in is the only one.
      assert.equal(await summary(page, 'signins'), '1 sign-in in the last 24 h: 1 succeeded, 0 failed.');
      await expectNoSeriousA11yViolations(page, 'the overview, empty');
      cp.assertClean();
    });

    test('seeded data: after Refresh the summaries, headlines and data tables state it', async () => {
      const db = suite.server.app.database.db;
      const seed = new StatsSeed(db);
      await seed.attempts(seededAttempts(minute));
      await seed.delivery({ createdAt: new Date(Date.now() - 30 * MINUTE), state: 'pending' });
      await seed.delivery({ createdAt: new Date(Date.now() - 10 * MINUTE), state: 'pending' });
      for (let n = 0; n < 3; n += 1)
        await recordAudit(db, {
          actor: { type: 'user', id: 'usr-unknown' },
          action: 'signin.failed',
          outcome: 'failure',
          at: minute,
        });
      await db
        .insertInto('token_stats')
        .values([
          { hour: toDbTime(tokenHour), grant_type: 'client_credentials', count: 5 },
          { hour: toDbTime(tokenHour), grant_type: 'refresh_token', count: 2 },
        ])
        .execute();

      const page = cp.page;
      await refresh(page);
      await page.getByText('10 attempts in the last 24 h').waitFor();
      const text = async () => mainText(page);
      assert.equal(
        await summary(page, 'attempts'),
        '10 attempts in the last 24 h, 70.0 % succeeded; 3 failed (timeout 2, status 1).',
        await text(),
      );
      assert.equal(await page.locator('#chart-success .headline-value').textContent(), '70.0 %');
      assert.equal(
        await summary(page, 'latency'),
        'Per 15 minutes, the median (p50) attempt took at most 50 ms and the 99th percentile at most 5,000 ms.',
      );
      assert.match(
        await page.locator('#chart-pending .chart-headline').innerText(),
        /^2\s+pending now, the oldest for 30 min$/,
      );
      assert.match(await summary(page, 'pending'), /^2 deliveries pending now, the oldest created 30 min ago\./);
      assert.equal(await summary(page, 'signins'), '4 sign-ins in the last 24 h: 1 succeeded, 3 failed.');
      assert.match(await summary(page, 'tokens'), /Client credentials 5/);
      assert.equal(await page.getByText('No webhook activity in the last 24 h').count(), 0, 'no empty state now');
      await expectSixCharts(page);

      assert.deepEqual(await tableRow(page, 'attempts', cellTime(minute)), [
        cellTime(minute),
        '7',
        '3',
        'timeout 2, status 1',
      ]);
      const quarter = new Date(Math.floor(minute.getTime() / (15 * MINUTE)) * 15 * MINUTE);
      assert.deepEqual(await tableRow(page, 'latency', cellTime(quarter)), [
        cellTime(quarter),
        '10',
        '50 ms',
        '5,000 ms',
      ]);
      const tokens = await tableRow(page, 'tokens', cellTime(tokenHour));
      const headers = await page.locator('#chart-tokens thead th').allTextContents();
      const column = (name: string) => tokens[headers.indexOf(name)];
      assert.equal(column('Total'), '7', `${headers.join('|')}\n${tokens.join('|')}`);
      assert.equal(column('Client credentials'), '5');
      assert.equal(column('Refresh token'), '2');
      assert.equal(column('Authorization code'), '0');
      await expectNoSeriousA11yViolations(page, 'the overview with data and an open table');
      cp.assertClean();
    });

    test('the charts follow the window size', async () => {
      const page = cp.page;
      const before = (await canvasSizes(page))[0]!.width;
      await page.setViewportSize({ width: 520, height: 900 });
      let after = before;
      await waitUntil(
        async () => {
          after = (await canvasSizes(page))[0]!.width;
          return after < before - 50;
        },
        WAIT_MS,
        () => `the attempts chart narrows with the window: ${before} → ${after}`,
      );
      assert.ok(after > 100, `still drawn: ${after}`);
      cp.assertClean();
    });

    test('the error state: the admin role taken away, the renewed token is refused', async () => {
      const db = suite.server.app.database.db;
      await updateUserRow(db, admin.id, { roles: [] });
      // The console renews the access token shortly before it expires: make that now, as time would.
      await db
        .updateTable('console_sessions')
        .set({ access_expires_at: toDbTime(new Date()) })
        .where('user_id', '=', admin.id)
        .execute();
      const page = cp.page;
      await refresh(page);
      const alert = page.locator('.overview').getByRole('alert');
      await alert.waitFor();
      assert.match((await alert.textContent()) ?? '', /this request needs the "admin:read" scope/);
      assert.equal(await page.locator('#chart-attempts').count(), 0, 'no stale charts under the error');
      assert.ok(await alert.getByRole('button', { name: 'Try again' }).isVisible());
      cp.assertClean();
    });

    test('a plain user sees a welcome and no overview, and the page asks for no statistics', async () => {
      const plain = await createPlainUser(suite.server);
      const other = await openConsolePage(suite.browser);
      try {
        await signInToConsole(other.page, suite.server, plain);
        await other.page.getByText(`Welcome, ${plain.name}.`).waitFor();
        const text = await mainText(other.page);
        assert.match(text, /no operator role/, text);
        assert.equal(await other.page.getByRole('heading', { name: /Overview/ }).count(), 0, text);
        assert.equal(await other.page.locator('canvas').count(), 0, text);
        assert.deepEqual(
          other.requests.filter((url) => /\/stats|uplot|overview|charts/.test(url)),
          [],
          'no request for the statistics, the charts or uPlot',
        );
        other.assertClean();
      } finally {
        await other.close();
      }
    });
  },
  // No dispatcher: the seeded pending deliveries stay pending, as when every dispatcher is down.
  { env: { WEBHOOK_DISPATCHER: 'false' } },
);
