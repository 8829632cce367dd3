// The integrator portal in tests (test/console/portal*.test.ts): a client that may manage webhooks, its
// token (clientToken: any client_credentials client and its token), a one-time portal link, and a browser
// page opened on the portal through that link.
import assert from 'node:assert/strict';
import type { Browser, Page, Response } from 'playwright-core';
import type { NewClient } from '../../src/auth-server/clients/clients.repository.ts';
import type { AuthTestServer } from './auth-server.ts';
import { openConsolePage, type ConsolePage } from './console.ts';
import { call, fetchWithin, type CallResult } from './http.ts';
import { tokenFrom, tokenRequest } from './oauth-requests.ts';

export interface PortalClient {
  clientId: string;
  name: string;
  /** Its own client_credentials token (webhooks:manage events:read), to seed and check through the API. */
  token: string;
}

export interface ClientToken {
  clientId: string;
  /** A client_credentials access token of the client for the scope it was made with. */
  token: string;
}

/** A new client registered for client_credentials with `scope` (and `input`), and its token for that scope. */
export async function clientToken(
  server: AuthTestServer,
  scope: string,
  input: Partial<NewClient> = {},
): Promise<ClientToken> {
  const client = await server.createClient({ scopes: scope.split(' '), grantTypes: ['client_credentials'], ...input });
  const issued = await tokenRequest(server, {
    grant_type: 'client_credentials',
    scope,
    client_id: client.clientId,
    client_secret: client.clientSecret!,
  });
  return { clientId: client.clientId, token: tokenFrom(issued, 'access_token', `a token for ${scope}`) };
}

/** A client registered for the webhook and event scopes, owned by `ownerId` if given. */
export async function createPortalClient(
  server: AuthTestServer,
  name: string,
  ownerId?: string,
): Promise<PortalClient> {
  const client = await clientToken(server, 'webhooks:manage events:read', { name, ...(ownerId && { ownerId }) });
  return { ...client, name };
}

/** POST /api/webhooks/portal-links as the client: the one-time URL. */
export async function issuePortalLink(server: AuthTestServer, client: PortalClient): Promise<string> {
  const result = await call(server.url, 'POST', '/api/webhooks/portal-links', { token: client.token });
  assert.equal(result.status, 201, `a portal link: ${result.status} ${result.text}`);
  return result.json.Url as string;
}

/**
 * A fresh browser page in a portal session for `client`, opened through a new portal link; it waits until
 * the portal shows the client's name, then goes to `path` (a portal page) if given.
 */
export async function openPortalByLink(
  browser: Browser,
  server: AuthTestServer,
  client: PortalClient,
  path?: string,
): Promise<ConsolePage> {
  const cp = await openConsolePage(browser);
  await followPortalLink(cp.page, await issuePortalLink(server, client));
  await cp.page.getByRole('link', { name: `Webhooks of ${client.name}` }).waitFor();
  if (path) await cp.page.goto(`${server.url}${path}`);
  return cp;
}

/**
 * Opens a portal link as a person does: its GET only shows "Open the portal of …" (a link scanner uses
 * nothing); the button posts the page's form, which uses the link and sends the browser on to
 * /console/portal. Returns the answer to that POST (a 303).
 */
export async function followPortalLink(page: Page, link: string): Promise<Response> {
  await page.goto(link);
  const posted = page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === link);
  await page.getByRole('button', { name: 'Open the portal' }).click();
  const response = await posted;
  await page.waitForURL((url) => url.pathname === '/console/portal');
  return response;
}

/** A portal session driven over plain HTTP, as the pages' fetches make it (cookie, Origin, CSRF header). */
export interface HttpPortal {
  /** What GET /console/session says of the portal (client_id, customer_id, session_id, …). */
  portal: Record<string, unknown>;
  call(method: string, path: string, body?: unknown): Promise<CallResult>;
}

/** POST /api/webhooks/portal-links as the client, for `customerId` if given: the whole answer. */
export async function issueLink(
  server: Pick<AuthTestServer, 'url'>,
  token: string,
  customerId?: string,
): Promise<{ Id: string; Url: string; CustomerId: string | null }> {
  const result = await call(server.url, 'POST', '/api/webhooks/portal-links', {
    token,
    ...(customerId && { body: { CustomerId: customerId } }),
  });
  assert.equal(result.status, 201, `a portal link: ${result.status} ${result.text}`);
  return result.json;
}

/** Uses a portal link as its page's form does (same Origin) and returns the session it opened. */
export async function openPortalOverHttp(server: Pick<AuthTestServer, 'url'>, link: string): Promise<HttpPortal> {
  const opened = await fetchWithin(link, { method: 'POST', headers: { origin: server.url }, redirect: 'manual' });
  assert.equal(opened.status, 303, `using the link: ${opened.status} ${await opened.text()}`);
  const cookie = opened.headers
    .getSetCookie()
    .map((c) => c.split(';', 1)[0]!)
    .join('; ');
  const session = await call(server.url, 'GET', '/console/session', { headers: { cookie } });
  assert.equal(session.status, 200, session.text);
  const csrf = String(session.json.csrf_token);
  return {
    portal: session.json.portal,
    call: (method, path, body) =>
      call(server.url, method, path, {
        body,
        headers: { cookie, origin: server.url, 'x-signet-console-csrf': csrf },
      }),
  };
}
