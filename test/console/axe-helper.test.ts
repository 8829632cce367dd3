// test/helpers/axe.ts on tiny local pages served with the console's CSP (script-src 'self', no
// 'unsafe-inline'): it finds a known serious violation (an image without alt text) and lists it, it
// passes a clean page, and it works where an inline <script> (page.addScriptTag({ content })) is refused.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CONSOLE_CSP } from '../../src/console/plugin.ts';
import { axeViolations, expectNoSeriousA11yViolations } from '../helpers/axe.ts';
import { findChromium, launchChromium } from '../helpers/browser.ts';
import { closeWithin, listenOnLoopback, withDeadline } from '../helpers/deadline.ts';

const CSP = CONSOLE_CSP;
const WAIT_MS = 15_000;

// As the console's own pages: without an icon link Chromium asks for /favicon.ico, and the 404 it logs
// (some runs, not all) would read as an error of axe's.
const ICON = '<link rel="icon" href="data:,">';
const PAGES: Record<string, string> = {
  '/clean':
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Clean</title>' +
    ICON +
    '</head>' +
    '<body><main><h1>Endpoints</h1><img src="/pixel.svg" alt="Status: healthy"><p>Nothing to fix.</p></main></body></html>',
  '/image-without-alt':
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Broken</title>' +
    ICON +
    '</head>' +
    '<body><main><h1>Endpoints</h1><img id="status" src="/pixel.svg"></main></body></html>',
};
const PIXEL = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>';

function startSite(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const html = PAGES[req.url ?? ''];
    if (html)
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP }).end(html);
    else if (req.url === '/pixel.svg') res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(PIXEL);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  return listenOnLoopback(server).then((port) => ({ url: `http://127.0.0.1:${port}`, server }));
}

describe('expectNoSeriousA11yViolations on pages with the console CSP', () => {
  let browser: Browser;
  let site: { url: string; server: Server };
  let context: BrowserContext;
  /** Every console error and CSP report of the current page. */
  let errors: string[];

  before(async () => {
    assert.ok(findChromium(), "these tests need Debian's chromium at /usr/bin/chromium (apt-get install chromium)");
    site = await startSite();
    browser = await withDeadline(launchChromium(), WAIT_MS, 'launching chromium');
    context = await browser.newContext();
    context.setDefaultTimeout(WAIT_MS);
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    if (site) await closeWithin(site.server, 'the axe test site');
  });

  const open = async (path: string): Promise<Page> => {
    const page = await context.newPage();
    errors = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    const response = await page.goto(`${site.url}${path}`);
    assert.equal(response?.headers()['content-security-policy'], CSP);
    return page;
  };

  test('the CSP is in force: an inline script (page.addScriptTag with content) is refused', async () => {
    const page = await open('/clean');
    try {
      await page.addScriptTag({ content: 'window.inlineRan = true;' }).catch(() => undefined);
      assert.equal(await page.evaluate(() => 'inlineRan' in globalThis), false, 'the inline script must not run');
      assert.ok(
        errors.some((e) => /Content Security Policy/i.test(e)),
        `a CSP violation is reported: ${JSON.stringify(errors)}`,
      );
    } finally {
      await page.close();
    }
  });

  test('an image without alt text fails, naming the rule, its impact, its help and the element', async () => {
    const page = await open('/image-without-alt');
    try {
      const failure = await expectNoSeriousA11yViolations(page, 'broken page').then(
        () => assert.fail('expected a violation'),
        (err: Error) => err,
      );
      assert.ok(failure instanceof assert.AssertionError, String(failure));
      assert.match(failure.message, /broken page/);
      assert.match(failure.message, /image-alt \[critical\] Images must have alternative text/);
      assert.match(failure.message, /#status/);
      assert.deepEqual(errors, [], 'axe ran without a CSP violation or console error');
    } finally {
      await page.close();
    }
  });

  test('a clean page passes, with axe injected and run under the CSP', async () => {
    const page = await open('/clean');
    try {
      await expectNoSeriousA11yViolations(page, 'clean page');
      assert.deepEqual(await axeViolations(page), []);
      assert.equal(await page.evaluate(() => typeof (globalThis as unknown as { axe?: unknown }).axe), 'object');
      assert.deepEqual(errors, [], 'axe ran without a CSP violation or console error');
    } finally {
      await page.close();
    }
  });
});
