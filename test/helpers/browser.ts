// A real browser for end-to-end tests of the login and consent pages: Debian's chromium driven by
// playwright-core (browsers are never downloaded), plus a real OAuth client callback server that records
// every redirect it receives.
import { accessSync, constants } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { listenOnLoopback, withDeadline } from './deadline.ts';

/** Debian's chromium (`apt-get install chromium`); .ci/run installs it when missing. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** CHROMIUM_PATH when it is executable, null otherwise. */
export function findChromium(): string | null {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return CHROMIUM_PATH;
  } catch {
    return null;
  }
}

export function launchChromium(executablePath: string = CHROMIUM_PATH): Promise<Browser> {
  return chromium.launch({
    executablePath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface CallbackServer {
  /** http://127.0.0.1:<port>/callback, to register as the client's redirect URI. */
  url: string;
  /** Every request that reached the callback path, in order, as full URLs. */
  received: URL[];
  close(): Promise<void>;
}

/** The client's redirect URI: answers a small page and remembers the query of every hit. */
export async function startCallbackServer(): Promise<CallbackServer> {
  const received: URL[] = [];
  let base = '';
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', base);
    if (url.pathname !== '/callback') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    received.push(url);
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .end('<!doctype html><title>Callback</title><p>Callback received</p>');
  });
  base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  return {
    url: `${base}/callback`,
    received,
    close: () =>
      withDeadline(
        new Promise<void>((resolve, reject) => {
          server.close((err) => (err ? reject(err) : resolve()));
          server.closeAllConnections();
        }),
        10_000,
        'closing the callback server',
      ),
  };
}
