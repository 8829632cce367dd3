// The delivery log in a real browser (docs/guides/portal.md): deliveries are made for real
// (test/helpers/console-seed.ts: orders and a ping through the API, the dispatcher POSTing to a local receiver where
// one endpoint answers 500 with a body and the others 200); then, as an admin on the page: the log lists them and its
// filters narrow the list and survive reload and back; a delivery shows its failed attempt's status, duration,
// error kind and response excerpt; redeliver sends it again and it arrives; "Recover since…" re-queues an
// endpoint's failed deliveries. What the page shows is compared with what the admin API answers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import {
  applyFilters,
  asAdmin,
  confirm,
  createPlainUser,
  describeInBrowser,
  expectRows,
  localInput,
  signInToConsole,
  tableRows,
  withPage,
} from '../helpers/console.ts';
import { FAILURE_BODY, LOG_SEED_ENV, seedDeliveryLog, type Delivery, type LogSeed } from '../helpers/console-seed.ts';
import { call } from '../helpers/http.ts';
import { expectStatus } from '../helpers/expect.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';

describeInBrowser(
  'the delivery log in a real browser',
  (suite) => {
    let seed: LogSeed;
    before(async () => {
      seed = await seedDeliveryLog(suite.server);
    });
    after(async () => {
      await seed?.close();
    });

    test('the delivery log lists every delivery; filters narrow it and survive reload and back', async () => {
      const { all, ids, failed } = seed;
      await asAdmin(suite, '/console/deliveries', async (page) => {
        await expectRows(
          page,
          all.map((d) => d.Id),
          'every delivery',
        );
        await expectNoSeriousA11yViolations(page, 'the delivery log');

        await page.getByLabel('State').selectOption('failed');
        await applyFilters(page);
        await expectRows(
          page,
          failed().map((d) => d.Id),
          'state failed',
        );
        assert.match(page.url(), /\?state=failed$/);
        await page.reload();
        await expectRows(
          page,
          failed().map((d) => d.Id),
          'state failed after a reload',
        );
        assert.equal(await page.getByLabel('State').inputValue(), 'failed', 'the form shows the filter');

        await page.getByLabel('State').selectOption('');
        await page.getByLabel('Event type').selectOption('webhook.ping');
        await applyFilters(page);
        const pings = all.filter((d) => d.EventType === 'webhook.ping');
        await expectRows(
          page,
          pings.map((d) => d.Id),
          'event type webhook.ping',
        );
        await page.goBack();
        await expectRows(
          page,
          failed().map((d) => d.Id),
          'back to state failed',
        );

        await page.getByRole('button', { name: 'Clear filters' }).click();
        await page.getByLabel('Client ID').fill(pings[0]!.ClientId);
        await applyFilters(page);
        await expectRows(
          page,
          pings.map((d) => d.Id),
          'by client',
        );

        // A time range before every delivery: the empty state, and `until` in RFC 3339 UTC in the URL.
        await page.getByRole('button', { name: 'Clear filters' }).click();
        await page.getByLabel('Created until').fill(await localInput(page, seed.seededAt));
        await applyFilters(page);
        await page.getByText('No delivery matches these filters.').waitFor();
        assert.match(decodeURIComponent(page.url()), /\?until=\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/);
        await page.getByLabel('Created since').fill(await localInput(page, seed.seededAt));
        await page.getByLabel('Created until').fill('');
        await applyFilters(page);
        await expectRows(
          page,
          all.map((d) => d.Id),
          'created since before the seed',
        );

        // A filter the API refuses: the page shows the problem's detail.
        const refused = await call(suite.server.url, 'GET', '/api/admin/webhook-deliveries?endpoint_id=whep_nope', {
          token: seed.ops,
        });
        expectStatus(refused, 400, 'a malformed endpoint id');
        await page.getByRole('button', { name: 'Clear filters' }).click();
        await page.getByLabel('Endpoint ID').fill('whep_nope');
        await applyFilters(page);
        await page.getByRole('alert').filter({ hasText: refused.json.detail }).waitFor();
      });

      // Another page links here with ?endpoint_id=.
      await asAdmin(suite, `/console/webhook-endpoints/${ids.down}`, async (page) => {
        await page.getByRole('link', { name: 'Delivery log of this endpoint' }).click();
        await expectRows(
          page,
          failed().map((d) => d.Id),
          'the endpoint’s deliveries',
        );
        assert.equal(await page.getByLabel('Endpoint ID').inputValue(), ids.down);
        await page.getByRole('heading', { name: 'Recover since…' }).waitFor();
      });
    });

    test('a delivery shows every attempt; redeliver sends it again and it arrives', async () => {
      const { receiver, ids, get } = seed;
      const target = seed.failed()[0]!;
      const detail: Delivery = await get(`/api/admin/webhook-deliveries/${target.Id}`);
      const attempt = detail.Attempts[0]!;
      assert.equal(attempt.StatusCode, 500, JSON.stringify(detail));
      assert.equal(attempt.ErrorKind, 'status');
      assert.equal(attempt.ResponseExcerpt, FAILURE_BODY);

      await asAdmin(suite, `/console/deliveries?endpoint_id=${ids.down}`, async (page) => {
        await page.getByRole('link', { name: target.Id }).click();
        await page.getByRole('heading', { name: `Delivery ${target.Id}` }).waitFor();
        const cells = page.getByRole('row').filter({ hasText: FAILURE_BODY }).getByRole('cell');
        assert.deepEqual(await cells.allTextContents(), [
          attempt.StartedAtUtc.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
          '500',
          `${attempt.DurationMs} ms`,
          'status',
          attempt.ErrorDetail ?? '—',
          FAILURE_BODY,
        ]);
        await expectNoSeriousA11yViolations(page, 'a delivery');

        receiver.answer = () => ({ status: 200 });
        const before = receiver.received.length;
        await page.getByRole('button', { name: 'Redeliver…' }).click();
        const asked = await confirm(page, 'Redeliver');
        assert.match(asked, new RegExp(`${ids.down}.*same delivery id`));
        await page.getByRole('status').filter({ hasText: 'Redelivery queued' }).waitFor();
        assert.equal(
          await page.getByRole('status').getByRole('link', { name: target.Id }).getAttribute('href'),
          `/console/deliveries/${target.Id}`,
        );
        await receiver.waitFor(before + 1);
        assert.equal(receiver.received.at(-1)!.headers['webhook-id'], target.Id, 'the same delivery arrived');
        let state = '';
        await waitUntil(
          async () => (state = (await get(`/api/admin/webhook-deliveries/${target.Id}`)).State) === 'succeeded',
          10_000,
          () => `the redelivery succeeded: ${state}`,
        );
        await page.getByRole('button', { name: 'Refresh' }).click();
        await waitUntil(
          async () => (await tableRows(page).count()) === 2,
          10_000,
          () => 'a second attempt shown',
        );
        assert.equal(await tableRows(page).nth(1).getByRole('cell').nth(1).textContent(), '200');
        assert.equal(await page.locator('dl.details dd').first().textContent(), 'succeeded');
      });
    });

    test('recover since a time re-queues the endpoint’s failed deliveries', async () => {
      const { receiver, ids, get } = seed;
      receiver.answer = () => ({ status: 200 });
      const stillFailed = (await get(`/api/admin/webhook-deliveries?endpoint_id=${ids.down}&state=failed`))
        .Items as Delivery[];
      assert.ok(stillFailed.length >= 1, 'a failed delivery to recover');
      await asAdmin(suite, `/console/deliveries?endpoint_id=${ids.down}`, async (page) => {
        const before = receiver.received.length;
        await page.getByLabel('Recover failed deliveries since').fill(await localInput(page, seed.seededAt));
        await page.getByRole('button', { name: 'Recover…' }).click();
        const asked = await confirm(page, 'Recover deliveries');
        assert.match(asked, new RegExp(`endpoint ${ids.down} created since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z \\(UTC\\)`));
        const n = stillFailed.length;
        await page
          .getByRole('status')
          .filter({ hasText: `Re-queued ${n} failed ${n === 1 ? 'delivery' : 'deliveries'}` })
          .waitFor();
        await receiver.waitFor(before + n);
        const arrived = receiver.received.slice(before).map((r) => r.headers['webhook-id']);
        assert.deepEqual(arrived.sort(), stillFailed.map((d) => d.Id).sort());
      });
      // A time in the future is refused: the problem's detail is shown.
      await asAdmin(suite, `/console/deliveries?endpoint_id=${ids.down}`, async (page) => {
        await page.getByLabel('Recover failed deliveries since').fill(await localInput(page, Date.now() + 86_400_000));
        await page.getByRole('button', { name: 'Recover…' }).click();
        await confirm(page, 'Recover deliveries');
        await page
          .getByRole('alert')
          .filter({ hasText: /future/i })
          .waitFor();
      });
    });

    test('a user without the admin role sees neither page', async () => {
      const plain = await createPlainUser(suite.server);
      await withPage(suite.browser, async ({ page }) => {
        await signInToConsole(page, suite.server, plain, '/console/deliveries');
        await page.getByRole('alert').filter({ hasText: 'not allowed' }).waitFor();
        assert.equal(await page.getByRole('link', { name: 'Delivery log' }).count(), 0);
        assert.equal(await page.getByRole('link', { name: 'Event browser' }).count(), 0);
      });
    });
  },
  { env: LOG_SEED_ENV },
);
