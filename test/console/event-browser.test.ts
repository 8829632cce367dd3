// The event browser in a real browser (docs/guides/portal.md), over real deliveries (test/helpers/console-seed.ts):
// as an admin on the page it filters by type, order id and time (the filters live in the URL and survive
// reload and back), and an event links to its deliveries. What the page shows is compared with what the
// admin API answers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { toDbTime } from '../../src/db/codecs.ts';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import { applyFilters, asAdmin, describeInBrowser, expectRows, localInput } from '../helpers/console.ts';
import { LOG_SEED_ENV, seedDeliveryLog, type LogSeed } from '../helpers/console-seed.ts';
import { expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';

interface AdminEvent {
  Id: string;
  Type: string;
  OrderId: number | null;
}

describeInBrowser(
  'the event browser in a real browser',
  (suite) => {
    let seed: LogSeed;
    before(async () => {
      seed = await seedDeliveryLog(suite.server);
    });
    after(async () => {
      await seed?.close();
    });

    const listEvents = async () => (await seed.get('/api/admin/events?limit=100')).Items as AdminEvent[];

    test('the event browser filters by type and order id; an event links to its deliveries', async () => {
      const { orders } = seed;
      const events = await listEvents();
      const created = events.filter((e) => e.Type === 'order.created');
      assert.equal(created.length, 2, JSON.stringify(events));
      const first = events.find((e) => e.OrderId === orders[0])!;
      await asAdmin(suite, '/console/events', async (page) => {
        await expectRows(
          page,
          events.map((e) => e.Id),
          'every event',
        );
        await expectNoSeriousA11yViolations(page, 'the event browser');
        await page.getByLabel('Event type').selectOption('order.created');
        await applyFilters(page);
        await expectRows(
          page,
          created.map((e) => e.Id),
          'order.created',
        );
        await page.reload();
        await expectRows(
          page,
          created.map((e) => e.Id),
          'order.created after a reload',
        );
        assert.equal(await page.getByLabel('Event type').inputValue(), 'order.created');

        await page.getByLabel('Order ID').fill(String(orders[0]));
        await applyFilters(page);
        await expectRows(page, [first.Id], 'one order');
        assert.match(page.url(), new RegExp(`type=order.created&order_id=${orders[0]}$`));

        const refused = await call(suite.server.url, 'GET', '/api/admin/events?order_id=abc', { token: seed.ops });
        expectStatus(refused, 400, 'an order id that is no number');
        await page.getByLabel('Order ID').fill('abc');
        await applyFilters(page);
        await page.getByRole('alert').filter({ hasText: refused.json.detail }).waitFor();
        await page.goBack();
        await expectRows(page, [first.Id], 'back to one order');

        await page.getByRole('link', { name: 'order.created' }).click();
        await page.getByRole('heading', { name: `Event ${first.Id}` }).waitFor();
        const data = (await page.locator('pre.json').textContent()) ?? '';
        assert.equal(JSON.parse(data).Id, orders[0], data);
        await expectNoSeriousA11yViolations(page, 'an event');
        await page.getByRole('link', { name: 'Deliveries of this event' }).click();
        await page.waitForURL(`**/console/deliveries?event_id=${first.Id}`);
        await expectRows(
          page,
          seed.all.filter((d) => d.EventId === first.Id).map((d) => d.Id),
          'the event’s deliveries',
        );
      });
    });

    // Runs last: it moves the ping's event back to 2020, so that a time splits the events.
    test('the event browser filters by time: since and until narrow the list and survive reload', async () => {
      await suite.server.app.database.db
        .updateTable('webhook_events')
        .set({ occurred_at: toDbTime(new Date('2020-01-02T12:00:00Z')) })
        .where('type', '=', 'webhook.ping')
        .execute();
      const events = await listEvents();
      const old = events.filter((e) => e.Type === 'webhook.ping').map((e) => e.Id);
      const recent = events.filter((e) => e.Type !== 'webhook.ping').map((e) => e.Id);
      assert.ok(old.length === 1 && recent.length >= 2, JSON.stringify(events));
      const split = Date.parse('2021-01-01T00:00:00Z');

      await asAdmin(suite, '/console/events', async (page) => {
        await expectRows(page, [...old, ...recent], 'every event');
        const typed = await localInput(page, split);
        // Since: the old event goes; the time is in the URL in RFC 3339 UTC (the page converts it).
        await page.getByLabel('Occurred since').fill(typed);
        await applyFilters(page);
        await expectRows(page, recent, 'occurred since 2021');
        assert.equal(new URL(page.url()).searchParams.get('since'), new Date(split).toISOString());
        await page.reload();
        await expectRows(page, recent, 'occurred since 2021 after a reload');
        assert.equal(await page.getByLabel('Occurred since').inputValue(), typed, 'the form shows the filter');

        // Until: only the old event.
        await page.getByRole('button', { name: 'Clear filters' }).click();
        await page.getByLabel('Occurred until').fill(typed);
        await applyFilters(page);
        await expectRows(page, old, 'occurred until 2021');
        assert.equal(new URL(page.url()).searchParams.get('until'), new Date(split).toISOString());
        await page.reload();
        await expectRows(page, old, 'occurred until 2021 after a reload');
        assert.equal(await page.getByLabel('Occurred until').inputValue(), typed);
        assert.equal(await page.getByLabel('Occurred since').inputValue(), '');
      });
    });
  },
  { env: LOG_SEED_ENV },
);
