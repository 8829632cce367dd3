// The integrator portal's pages in a real browser (docs/guides/portal.md), opened through a portal link as one client:
// send a test event (the local receiver gets it, the page follows the delivery); the delivery log with a
// failed attempt's status, duration, error kind and response excerpt; redeliver and "recover since" (both
// confirmed) make deliveries that arrive; the event catalogue shows every type of /openapi.json with its
// example; the verify page shows the three snippets, and copying one puts exactly the file on the clipboard.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import { confirm, describeInBrowser, localInput, mainText, WAIT_MS, type ConsolePage } from '../helpers/console.ts';
import { call, callExpecting } from '../helpers/http.ts';
import { createPortalClient, openPortalByLink, type PortalClient } from '../helpers/portal.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

// One attempt each: a 500 fails the delivery for good at once, so the log settles quickly.
const ENV = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s' };
const FAILURE_BODY = 'receiver exploded: the database is locked';
const SNIPPET_DIR = new URL('../../src/console/snippets/', import.meta.url);

interface Sent {
  Id: string;
  Type: string;
  Data: unknown;
}

describeInBrowser(
  'integrator portal pages',
  (suite) => {
    let shop: PortalClient;
    let token: string;
    let okReceiver: TestReceiver;
    let failingReceiver: TestReceiver;
    let okEndpoint: string;
    let failingEndpoint: string;
    let strangerEndpoint: string;
    let webhooks: Record<string, { post: { requestBody: { content: Record<string, { example: Sent }> } } }>;
    /** The failing receiver answers 500 with FAILURE_BODY while this is true, then 200. */
    let failing = true;

    before(async () => {
      shop = await createPortalClient(suite.server, 'Portal shop');
      token = shop.token;
      okReceiver = await startReceiver();
      failingReceiver = await startReceiver();
      failingReceiver.answer = () => (failing ? { status: 500, body: FAILURE_BODY } : { status: 200 });
      const register = async (url: string, description: string) =>
        (await registerEndpoint(suite.server, token, url, ['order.paid'], { Description: description })).json
          .Id as string;
      okEndpoint = await register(okReceiver.url, 'works');
      failingEndpoint = await register(failingReceiver.url, 'fails');
      webhooks = (await call(suite.server.url, 'GET', '/openapi.json')).json.webhooks;
      // Another client's endpoint: the portal of the shop must never offer it.
      const other = await createPortalClient(suite.server, 'Other shop');
      strangerEndpoint = (
        await registerEndpoint(suite.server, other.token, okReceiver.url, ['*'], { Description: 'not yours' })
      ).json.Id as string;
    });
    after(async () => {
      await okReceiver?.close();
      await failingReceiver?.close();
    });

    /** A portal session for the shop, opened through a one-time portal link (test/helpers/portal.ts). */
    const openPortal = (path: string): Promise<ConsolePage> =>
      openPortalByLink(suite.browser, suite.server, shop, path);

    const delivery = async (id: string) =>
      (await callExpecting(suite.server.url, 'GET', `/api/webhooks/deliveries/${id}`, 200, { token })).json as {
        Id: string;
        State: string;
        Attempts: unknown[];
      };
    const settled = async (id: string) => {
      let last: Awaited<ReturnType<typeof delivery>> | undefined;
      await waitUntil(
        async () => (last = await delivery(id)).State !== 'pending',
        WAIT_MS,
        () => `delivery ${id} settled; last: ${JSON.stringify(last)}`,
      );
      return last!;
    };
    const example = (type: string) => webhooks[type]!.post.requestBody.content['application/json']!.example;

    test('send a test event: the receiver gets it and the page shows the delivery', async () => {
      const cp = await openPortal('/console/portal/test');
      const { page } = cp;
      // The options name each endpoint by URL and description: the shop's two, never the other shop's.
      await page.getByLabel('Endpoint').locator('option', { hasText: '(works)' }).waitFor({ state: 'attached' });
      const offered = await page.getByLabel('Endpoint').locator('option').allTextContents();
      assert.deepEqual(
        offered
          .filter((o) => o.startsWith('http'))
          .map((o) => o.replace(/^\S+ /, ''))
          .sort(),
        ['(fails)', '(works)'],
        `only the shop's endpoints, not ${strangerEndpoint}: ${offered.join(' | ')}`,
      );
      await page.getByLabel('Endpoint').selectOption(okEndpoint);
      await page.getByLabel('Event type').selectOption('order.shipped');
      const shown = await page.locator('pre.payload').textContent();
      assert.deepEqual(JSON.parse(shown ?? ''), example('order.shipped'), `the example shown: ${shown}`);
      const before = okReceiver.received.length;
      await page.getByRole('button', { name: 'Send test event' }).click();
      const [got] = (await okReceiver.waitFor(before + 1)).slice(before);
      const sent = JSON.parse(got!.body) as Sent;
      assert.equal(sent.Type, 'order.shipped');
      assert.deepEqual(sent.Data, example('order.shipped').Data);
      const deliveryId = String(got!.headers['x-service-delivery']);
      const notice = page.getByRole('status').filter({ hasText: deliveryId });
      await notice.filter({ hasText: 'succeeded' }).waitFor();
      await page.getByRole('link', { name: 'See it in the delivery log' }).click();
      await page.getByRole('heading', { name: `Delivery ${deliveryId}` }).waitFor();
      const attempts = page.locator('table', { hasText: 'Every attempt' });
      await attempts.locator('tbody tr').filter({ hasText: '200' }).waitFor();
      await expectNoSeriousA11yViolations(page, 'the test-event page');
      cp.assertClean();
      await cp.close();
    });

    test('the delivery log shows attempts; redeliver and recover send failed deliveries again', async () => {
      failing = true;
      const first = (
        await callExpecting(suite.server.url, 'POST', `/api/webhooks/${failingEndpoint}/test-events`, 202, {
          token,
          body: { Type: 'order.paid' },
        })
      ).json.Id as string;
      assert.equal((await settled(first)).State, 'failed');
      const cp = await openPortal(`/console/portal/deliveries?endpoint_id=${failingEndpoint}`);
      const { page } = cp;
      const log = page.locator('table', { hasText: 'Deliveries to this endpoint' });
      await log.locator('tbody tr').filter({ hasText: first }).filter({ hasText: 'failed' }).waitFor();
      await log.getByRole('link', { name: first }).click();
      await page.getByRole('heading', { name: `Delivery ${first}` }).waitFor();
      const attempt = page.locator('table', { hasText: 'Every attempt' }).locator('tbody tr');
      await attempt.first().waitFor();
      const cells = await attempt.first().locator('th, td').allTextContents();
      assert.equal(cells[2], '500', `status: ${cells.join(' | ')}`);
      assert.match(cells[3] ?? '', /^\d+ ms$/, `duration: ${cells.join(' | ')}`);
      assert.equal(cells[4], 'status', `error kind: ${cells.join(' | ')}`);
      assert.equal(cells[6], FAILURE_BODY, `excerpt: ${cells.join(' | ')}`);

      // Redeliver, confirmed: the same delivery id arrives again, and the receiver now answers 200.
      failing = false;
      const before = failingReceiver.received.length;
      await page.getByRole('button', { name: 'Redeliver…' }).click();
      const asked = await confirm(page, 'Redeliver');
      assert.match(asked, /same delivery id/, asked);
      const [again] = (await failingReceiver.waitFor(before + 1)).slice(before);
      assert.equal(again!.headers['x-service-delivery'], first);
      await page
        .getByRole('status')
        .filter({ hasText: `Redelivery queued: ${first}` })
        .waitFor();
      assert.equal((await settled(first)).State, 'succeeded');

      // Recover since an hour ago, confirmed: a second failed delivery is sent again.
      failing = true;
      const second = (
        await callExpecting(suite.server.url, 'POST', `/api/webhooks/${failingEndpoint}/test-events`, 202, {
          token,
          body: { Type: 'order.cancelled' },
        })
      ).json.Id as string;
      assert.equal((await settled(second)).State, 'failed');
      failing = false;
      const since = new Date(Date.now() - 3_600_000);
      await page.getByLabel('Recover failed deliveries since').fill(await localInput(page, since.getTime()));
      await page.getByRole('button', { name: 'Recover…' }).click();
      const recoverText = await confirm(page, 'Recover deliveries');
      assert.match(recoverText, /failed for good is queued again/, recoverText);
      await page.getByRole('status').filter({ hasText: 'Re-queued 1 failed delivery' }).waitFor();
      await waitUntil(
        () => failingReceiver.received.some((r, i) => i > before && r.headers['x-service-delivery'] === second),
        WAIT_MS,
        () => `the recovered delivery ${second} arrives`,
      );
      assert.equal((await settled(second)).State, 'succeeded');
      // The log re-read itself when the recovery was queued (still pending then): read it again.
      await page.getByRole('button', { name: 'Refresh the log' }).click();
      await log.locator('tbody tr').filter({ hasText: second }).filter({ hasText: 'succeeded' }).waitFor();
      await expectNoSeriousA11yViolations(page, 'the delivery log');
      cp.assertClean();
      await cp.close();
    });

    test('the event catalogue lists every type with its example', async () => {
      const cp = await openPortal('/console/portal/catalogue');
      const { page } = cp;
      const types = Object.keys(webhooks);
      assert.ok(types.length >= 9, types.join(', '));
      for (const type of types) {
        const section = page.locator('section.catalogue-type', {
          has: page.getByRole('heading', { name: type, exact: true }),
        });
        await section.waitFor();
        const shown = JSON.parse((await section.locator('pre.payload').textContent()) ?? '');
        assert.deepEqual(shown, example(type), `${type}: the example shown`);
        const members = await section.locator('tbody th').allTextContents();
        const data = example(type).Data as Record<string, unknown>;
        for (const member of Object.keys(data)) assert.ok(members.includes(member), `${type}: ${member} in ${members}`);
      }
      assert.equal(await page.locator('section.catalogue-type').count(), types.length, await mainText(page));
      await expectNoSeriousA11yViolations(page, 'the event catalogue');
      cp.assertClean();
      await cp.close();
    });

    test('the verify page shows the three snippets, and copying one copies the file exactly', async () => {
      const cp = await openPortal('/console/portal/verify');
      const { page } = cp;
      await cp.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: suite.server.url });
      for (const file of ['node-receiver.mjs', 'node-crypto.mjs', 'verify.sh']) {
        const source = readFileSync(new URL(file, SNIPPET_DIR), 'utf8');
        const shown = await page.getByLabel(file, { exact: true }).textContent();
        assert.equal(shown, source, `${file} shown verbatim`);
      }
      await page.getByRole('button', { name: 'Copy node-crypto.mjs' }).click();
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      const copied = await page.evaluate('navigator.clipboard.readText()');
      assert.equal(copied, readFileSync(new URL('node-crypto.mjs', SNIPPET_DIR), 'utf8'));
      await expectNoSeriousA11yViolations(page, 'the verify page');
      cp.assertClean();
      await cp.close();
    });
  },
  { env: ENV },
);
