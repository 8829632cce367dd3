// The console's first load is at most 200 KB of compressed script and style. A
// signed-in admin opens /console (the overview, the heaviest page: it loads uPlot) with the browser's
// cache off, so every file is fetched as a first visit fetches it; the bodies' bytes on the wire (their
// Content-Length, compressed) of every script and stylesheet are summed. The figure is printed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Response } from 'playwright-core';
import {
  describeInBrowser,
  createAdmin,
  mainText,
  openConsolePage,
  signInToConsole,
  WAIT_MS,
} from '../helpers/console.ts';

/** The budget of the first load (docs/guides/portal.md gives the measured size): 200 KB compressed. */
const BUDGET_BYTES = 200 * 1000;

interface Fetched {
  url: string;
  type: string;
  status: number;
  coding: string;
  bytes: number;
}

async function describeResponse(response: Response): Promise<Fetched> {
  const headers = await response.allHeaders();
  return {
    url: new URL(response.url()).pathname,
    type: response.request().resourceType(),
    status: response.status(),
    coding: headers['content-encoding'] ?? 'identity',
    bytes: Number(headers['content-length'] ?? (await response.body()).length),
  };
}

describeInBrowser('the console first load size', (suite) => {
  test('an admin opening /console fetches at most 200 KB of compressed script and style', async () => {
    const admin = await createAdmin(suite.server);
    const cp = await openConsolePage(suite.browser);
    try {
      await signInToConsole(cp.page, suite.server, admin, '/console');
      // The same session, a first visit's fetches: Chrome's cache off (DevTools protocol).
      const cdp = await cp.context.newCDPSession(cp.page);
      await cdp.send('Network.enable');
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      const pending: Promise<Fetched>[] = [];
      cp.page.on('response', (response) => {
        const type = response.request().resourceType();
        if (type === 'script' || type === 'stylesheet') pending.push(describeResponse(response));
      });
      await cp.page.reload();
      await cp.page.getByRole('heading', { level: 2, name: 'Overview of the last 24 hours' }).waitFor();
      await cp.page.locator('.loading').first().waitFor({ state: 'detached' });
      await cp.page.waitForLoadState('networkidle', { timeout: WAIT_MS });
      const fetched = await Promise.all(pending);
      const table = fetched.map((f) => `${f.status} ${f.coding.padEnd(8)} ${String(f.bytes).padStart(7)}  ${f.url}`);
      const total = fetched.reduce((sum, f) => sum + f.bytes, 0);
      console.log(
        `console first load (${suite.dialect}): ${fetched.length} scripts and stylesheets, ${total} bytes compressed (${(total / 1000).toFixed(1)} KB)\n${table.join('\n')}`,
      );
      assert.ok(
        fetched.some((f) => f.url === '/console/vendor/uplot.js'),
        `the overview's charts were loaded: ${table.join('\n')}\n${await mainText(cp.page)}`,
      );
      const uncompressed = fetched.filter((f) => f.status !== 200 || f.coding === 'identity');
      assert.deepEqual(uncompressed, [], 'every script and stylesheet arrives compressed, in full (no cache)');
      assert.ok(total <= BUDGET_BYTES, `${total} bytes > ${BUDGET_BYTES}:\n${table.join('\n')}`);
      cp.assertClean();
    } finally {
      await cp.close();
    }
  });
});
