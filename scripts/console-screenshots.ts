// Screenshots of the console for docs/guides/portal.md: Signet on a temporary SQLite database with
// realistic data, Debian's chromium, three PNGs in docs/screenshots/:
//   overview.png (/console), deliveries.png (/console/deliveries), portal-endpoints.png (/console/portal/endpoints).
//
//   npm run screenshots          (= node scripts/console-screenshots.ts; needs /usr/bin/chromium)
//
// The data: real orders, endpoints and deliveries made through the API (one receiver answers 500, so a few
// deliveries fail), client-credentials tokens, a failed and a good sign-in; and 24 h of earlier webhook
// attempts written into the tables (test/helpers/stats-seed.ts), so the overview's charts have a history.
import { mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { FLUSH_INTERVAL_MS } from '../src/auth-server/tokens/token-stats.ts';
import { startAuthServer, type AuthTestServer } from '../test/helpers/auth-server.ts';
import { findChromium, launchChromium } from '../test/helpers/browser.ts';
import { createAdmin, fillLoginForm, openConsolePage, type TestUser } from '../test/helpers/console.ts';
import { call, type CallResult } from '../test/helpers/http.ts';
import { tokenFrom, tokenRequest } from '../test/helpers/oauth-requests.ts';
import { createPortalClient, openPortalByLink, type PortalClient } from '../test/helpers/portal.ts';
import { StatsSeed } from '../test/helpers/stats-seed.ts';
import { LOCAL_WEBHOOKS_ENV, startReceiver, waitUntil, type TestReceiver } from '../test/helpers/webhook-receiver.ts';
import type { Browser, Page } from 'playwright-core';

const OUT = new URL('../docs/screenshots/', import.meta.url);
const VIEWPORT = { width: 1280, height: 900 };
const HOUR_MS = 3_600_000;

async function ok(result: Promise<CallResult>, what: string): Promise<CallResult['json']> {
  const r = await result;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
  return r.json;
}

async function clientToken(server: AuthTestServer, name: string, scope: string): Promise<string> {
  const client = await server.createClient({ name, scopes: scope.split(' '), grantTypes: ['client_credentials'] });
  const issued = await tokenRequest(server, {
    grant_type: 'client_credentials',
    scope,
    client_id: client.clientId,
    client_secret: client.clientSecret!,
  });
  return tokenFrom(issued, 'access_token', `a token for ${name}`);
}

/** 24 h of earlier attempts: a daily curve, about 2 % failures, latencies around 40–300 ms. */
async function seedHistory(server: AuthTestServer): Promise<void> {
  const seed = new StatsSeed(server.app.database.db);
  const now = Date.now();
  for (let minute = 24 * 60; minute > 5; minute -= 4) {
    const at = now - minute * 60_000;
    const load = 3 + Math.round(3 * Math.sin((at / HOUR_MS / 24) * 2 * Math.PI) + Math.random() * 3);
    await seed.attempts(
      Array.from({ length: load }, (_, i) => ({
        startedAt: new Date(at + i * 1000),
        durationMs: Math.round(40 + Math.random() ** 3 * 260),
        errorKind: Math.random() < 0.02 ? (Math.random() < 0.5 ? 'http-status' : 'timeout') : null,
      })),
    );
  }
}

/** Orders and deliveries through the API: two shops, three endpoints, one of them answering 500. */
async function seedDeliveries(server: AuthTestServer, receiver: TestReceiver, shop: PortalClient): Promise<void> {
  const orders = await clientToken(server, 'Checkout service', 'orders:write webhooks:manage');
  const register = (token: string, path: string, events: string[], description: string) =>
    ok(
      call(server.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: `${receiver.url}/${path}`, Events: events, Description: description },
      }),
      `register ${path}`,
    );
  await register(orders, 'fulfilment', ['order.created', 'order.updated'], 'Fulfilment');
  await register(orders, 'analytics-down', ['order.created'], 'Analytics (flaky)');
  await register(shop.token, 'shop/orders', ['order.created'], 'Shop back office');
  await register(shop.token, 'shop/payments', ['order.paid', 'webhook.ping'], 'Payments');
  for (let i = 0; i < 12; i++) {
    const body = { CustomerId: randomUUID(), Total: Math.round(500 + Math.random() * 20_000) / 100 };
    await ok(call(server.url, 'POST', '/api/orders', { token: orders, body }), 'create an order');
  }
  const admin = await clientToken(server, 'Operations', 'admin:read');
  let pending = -1;
  await waitUntil(
    async () => {
      const page = await ok(
        call(server.url, 'GET', '/api/admin/webhook-deliveries?state=pending&limit=1', { token: admin }),
        'pending deliveries',
      );
      pending = page.Items.length;
      return pending === 0;
    },
    60_000,
    () => `every delivery settled (${pending} pending)`,
  );
}

async function signIn(page: Page, server: AuthTestServer, admin: TestUser): Promise<void> {
  await page.goto(`${server.url}/console`);
  await fillLoginForm(page, { ...admin, password: 'not the password' }); // one failed sign-in for the chart
  await page.getByLabel('Password').waitFor();
  await fillLoginForm(page, admin);
  await page.getByRole('banner').getByText(admin.name).waitFor();
}

async function shoot(page: Page, path: string, heading: string, file: string): Promise<void> {
  if (new URL(page.url()).pathname !== path) await page.goto(page.url().replace(/\/console.*$/, path));
  await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  await page.waitForLoadState('networkidle');
  await page.locator('.loading').first().waitFor({ state: 'detached' });
  await page.screenshot({ path: new URL(file, OUT).pathname, fullPage: true });
  console.log(`docs/screenshots/${file}`);
}

async function main(): Promise<void> {
  const chromium = findChromium();
  if (!chromium) throw new Error("the screenshots need Debian's chromium at /usr/bin/chromium");
  mkdirSync(OUT, { recursive: true });
  const server = await startAuthServer('sqlite', { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s' });
  const receiver = await startReceiver();
  receiver.answer = (request) =>
    request.url?.includes('-down') ? { status: 500, body: 'upstream unavailable' } : { status: 200 };
  let browser: Browser | undefined;
  try {
    const shop = await createPortalClient(server, 'Corner shop');
    await seedDeliveries(server, receiver, shop);
    await seedHistory(server);
    const admin = await createAdmin(server);
    browser = await launchChromium(chromium);
    const cp = await openConsolePage(browser);
    await cp.page.setViewportSize(VIEWPORT);
    await signIn(cp.page, server, admin);
    // Token counts reach the database at the next flush (src/auth-server/tokens/token-stats.ts): wait for it.
    await new Promise((resolve) => setTimeout(resolve, FLUSH_INTERVAL_MS + 1000));
    await cp.page.reload();
    await shoot(cp.page, '/console', 'Home', 'overview.png');
    await shoot(cp.page, '/console/deliveries', 'Delivery log', 'deliveries.png');
    await cp.close();
    const portal = await openPortalByLink(browser, server, shop, '/console/portal/endpoints');
    await portal.page.setViewportSize(VIEWPORT);
    await shoot(portal.page, '/console/portal/endpoints', 'Endpoints', 'portal-endpoints.png');
    await portal.close();
  } finally {
    await browser?.close();
    await receiver.close();
    await server.close();
  }
}

await main();
