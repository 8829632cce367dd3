// The console backend's security and robustness fixes found in review (docs/guides/portal.md, security model): each
// test here failed before its fix.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { maskPortalLink } from '../../src/http/ops/request-log.ts';
import { safeReturnTo } from '../../src/console/context.ts';
import { portalMayCall } from '../../src/console/portal.ts';
import { consoleKey, hashId } from '../../src/console/sessions.ts';
import { seal, unseal } from '../../src/db/sealed.ts';
import { resolveSecretKey } from '../../src/webhooks/store/secrets.ts';
import type { AuthTestServer } from '../helpers/auth-server.ts';
import { startAuthServer } from '../helpers/auth-server.ts';
import { findChromium, launchChromium } from '../helpers/browser.ts';
import { createAdmin, openConsolePage, signInToConsole, type ConsolePage, type TestUser } from '../helpers/console.ts';
import { TEST_WEBHOOK_SECRET_KEY, testDialects } from '../helpers/databases.ts';
import { fetchWithin } from '../helpers/http.ts';
import { clientToken, createPortalClient, issuePortalLink } from '../helpers/portal.ts';

const CORS_ORIGIN = 'https://app.example.test';

describe('pure checks', () => {
  test('1: a portal may not reach portal-links, encoded or not; an undecodable path is refused', () => {
    for (const path of [
      '/api/webhooks/portal-links',
      '/api/webhooks/%70ortal-links',
      '/api/webhooks/portal%2Dlinks/x',
      '/api/webhooks/%E0%A4%A',
      '/api/admin/users',
    ])
      for (const method of ['GET', 'POST']) assert.equal(portalMayCall(method, path), false, `${method} ${path}`);
    assert.equal(portalMayCall('GET', '/api/webhooks?limit=5'), true);
    assert.equal(portalMayCall('GET', '/api/events'), false, 'the portal pages read no event feed');
  });

  test('2: return_to never leads to a portal link', () => {
    assert.equal(safeReturnTo(`/console/portal-links/${'A'.repeat(43)}`), '/console');
    assert.equal(safeReturnTo(`/console/%70ortal-links/${'A'.repeat(43)}`), '/console');
    assert.equal(safeReturnTo('/console/users?limit=5'), '/console/users?limit=5');
  });

  test('9: a portal link token is masked in request logs', () => {
    const token = 'B'.repeat(43);
    assert.equal(maskPortalLink(`/console/portal-links/${token}`), '/console/portal-links/[token]');
    assert.equal(maskPortalLink(`/console/%70ortal-links/${token}?x=1`), '/console/portal-links/[token]');
    assert.equal(maskPortalLink('/console/users'), '/console/users');
  });
});

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** A request as the signed-in browser sends it: its cookies, and (unless told) its Origin and CSRF header. */
async function asBrowser(
  server: AuthTestServer,
  cookie: string,
  method: string,
  path: string,
  options: { body?: string; contentType?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { cookie, ...options.headers };
  if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const response = await fetchWithin(`${server.url}${path}`, {
    method,
    headers,
    body: options.body,
    redirect: 'manual',
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function cookiesOf(cp: ConsolePage, server: AuthTestServer): Promise<string> {
  return (await cp.context.cookies(server.url)).map((c) => `${c.name}=${c.value}`).join('; ');
}

async function csrfOf(server: AuthTestServer, cookie: string): Promise<string> {
  const session = JSON.parse((await asBrowser(server, cookie, 'GET', '/console/session')).text) as {
    csrf_token: string;
  };
  return session.csrf_token;
}

/** The portal cookie a link opens (the confirmation form's POST, from its own origin). */
async function openLinkPortal(server: AuthTestServer, link: string, cookie = ''): Promise<string> {
  const path = new URL(link).pathname;
  const opened = await asBrowser(server, cookie, 'POST', path, {
    body: '',
    contentType: 'application/x-www-form-urlencoded',
    headers: { origin: server.url },
  });
  assert.equal(opened.status, 303, opened.text);
  const setCookie = opened.headers.get('set-cookie') ?? '';
  return [cookie, setCookie.split(';')[0]!].filter(Boolean).join('; ');
}

const chromiumPath = findChromium();
if (chromiumPath)
  describe('console security fixes in a real browser and over HTTP', () => {
    let browser: Browser;
    before(async () => {
      browser = await launchChromium(chromiumPath);
    });
    after(async () => {
      await browser.close();
    });

    for (const dialect of testDialects()) {
      describe(dialect, () => {
        let server: AuthTestServer;
        let admin: TestUser;
        let cp: ConsolePage;
        let cookie: string;
        let csrf: string;
        before(async () => {
          server = await startAuthServer(dialect, { TRUST_PROXY: 'loopback', CORS_ORIGINS: CORS_ORIGIN });
          admin = await createAdmin(server);
          cp = await openConsolePage(browser);
          await signInToConsole(cp.page, server, admin, '/console/users');
          cookie = await cookiesOf(cp, server);
          csrf = await csrfOf(server, cookie);
        });
        after(async () => {
          await cp.close();
          await server.close();
        });

        test('1: a link portal cannot mint a new portal link through a percent-encoded path', async () => {
          const shop = await createPortalClient(server, 'Encoded shop');
          const portal = await openLinkPortal(server, await issuePortalLink(server, shop));
          const portalCsrf = await csrfOf(server, portal);
          for (const path of ['/console/api/webhooks/%70ortal-links', '/console/api/webhooks/portal%2Dlinks']) {
            const refused = await asBrowser(server, portal, 'POST', path, {
              body: '{}',
              headers: { origin: server.url, 'x-signet-console-csrf': portalCsrf },
            });
            assert.equal(refused.status, 403, `${path}: ${refused.text}`);
            assert.match(refused.headers.get('content-type') ?? '', /application\/problem\+json/);
          }
        });

        test('2: GET shows a confirmation page and uses nothing; only a same-origin POST opens the portal', async () => {
          const shop = await createPortalClient(server, 'Confirm & shop');
          const link = await issuePortalLink(server, shop);
          const path = new URL(link).pathname;
          for (let i = 0; i < 2; i += 1) {
            const page = await asBrowser(server, '', 'GET', path);
            assert.equal(page.status, 200, page.text);
            assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
            assert.equal(page.headers.get('cache-control'), 'no-store');
            assert.equal(page.headers.get('set-cookie'), null);
            assert.match(page.text, /Open the portal of Confirm &#38; shop/);
            assert.match(page.text, /<form method="post">/);
            assert.doesNotMatch(page.text, /<script/);
          }
          const form = { body: '', contentType: 'application/x-www-form-urlencoded' };
          const refusals: Record<string, string>[] = [
            {},
            { origin: 'https://evil.example' },
            { origin: 'null' },
            { origin: 'null', 'sec-fetch-site': 'cross-site' },
          ];
          for (const headers of refusals) {
            const refused = await asBrowser(server, '', 'POST', path, { ...form, headers });
            assert.equal(refused.status, 403, `${JSON.stringify(headers)}: ${refused.text}`);
          }
          // Still unused: the real browser opens it, with the page's own form.
          const page = await openConsolePage(browser);
          try {
            const shown = await page.page.goto(link);
            assert.equal(shown?.status(), 200);
            await page.page.getByRole('button', { name: 'Open the portal' }).click();
            await page.page.waitForURL((url) => url.pathname === '/console/portal');
            await page.page.getByRole('link', { name: 'Webhooks of Confirm & shop' }).waitFor();
            page.assertClean();
          } finally {
            await page.close();
          }
          assert.equal((await asBrowser(server, '', 'GET', path)).status, 410);
        });

        test('2: beside a console session the page says so, and the portal never takes over the operator’s API', async () => {
          const shop = await createPortalClient(server, 'Beside shop');
          const link = await issuePortalLink(server, shop);
          const page = await asBrowser(server, cookie, 'GET', new URL(link).pathname);
          assert.match(page.text, new RegExp(`signed in to the console as ${admin.name}`), page.text);
          const both = await openLinkPortal(server, link, cookie);
          const users = await asBrowser(server, both, 'GET', '/console/api/admin/users', {
            headers: { origin: server.url, 'x-signet-console-csrf': csrf },
          });
          assert.equal(users.status, 200, users.text);
          const portalCsrf = await csrfOf(server, both);
          const asPortal = await asBrowser(server, both, 'GET', '/console/api/admin/users', {
            headers: { origin: server.url, 'x-signet-console-csrf': portalCsrf },
          });
          assert.equal(asPortal.status, 403, asPortal.text);
        });

        test('3: an owner’s portal ends when the owner changes or the client is deleted, and at re-mint', async () => {
          const admins = { origin: server.url, 'x-signet-console-csrf': csrf };
          const openOwned = async (name: string) => {
            // No redirect URIs: a client_credentials client the admin API may PATCH.
            const client = await clientToken(server, 'webhooks:manage events:read', {
              name,
              ownerId: admin.id,
              redirectUris: [],
            });
            const opened = await asBrowser(server, cookie, 'POST', '/console/portal-sessions', {
              body: JSON.stringify({ client_id: client.clientId }),
              headers: admins,
            });
            assert.equal(opened.status, 201, opened.text);
            const withPortal = `${cookie}; ${(opened.headers.get('set-cookie') ?? '').split(';')[0]}`;
            const ok = await asBrowser(server, withPortal, 'GET', '/console/api/webhooks', { headers: admins });
            assert.equal(ok.status, 200, ok.text);
            return { client, withPortal };
          };
          const ended = async (withPortal: string, why: string) => {
            const session = JSON.parse((await asBrowser(server, withPortal, 'GET', '/console/session')).text) as {
              portal?: unknown;
            };
            assert.equal(session.portal, undefined, why);
          };

          const patched = await openOwned('Owner change shop');
          const other = await server.createUser();
          const patch = await asBrowser(
            server,
            cookie,
            'PATCH',
            `/console/api/admin/clients/${patched.client.clientId}`,
            {
              body: JSON.stringify({ owner: other.email }),
              contentType: 'application/merge-patch+json',
              headers: admins,
            },
          );
          assert.equal(patch.status, 200, patch.text);
          await ended(patched.withPortal, 'the owner changed');

          const deleted = await openOwned('Deleted shop');
          const removal = await asBrowser(
            server,
            cookie,
            'DELETE',
            `/console/api/admin/clients/${deleted.client.clientId}`,
            {
              headers: admins,
            },
          );
          assert.equal(removal.status, 204, removal.text);
          await ended(deleted.withPortal, 'the client is gone');

          // Changed elsewhere (as the CLI would): the next new client token asks the owner again.
          const cli = await openOwned('CLI shop');
          await server.app.database.db
            .updateTable('oauth_clients')
            .set({ owner_id: other.id })
            .where('id', '=', cli.client.clientId)
            .execute();
          await server.app.database.db
            .updateTable('console_portal_sessions')
            .set({ access_expires_at: dialect === 'postgres' ? new Date(0) : new Date(0).toISOString() } as never)
            .where('client_id', '=', cli.client.clientId)
            .execute();
          const refused = await asBrowser(server, cli.withPortal, 'GET', '/console/api/webhooks', { headers: admins });
          assert.equal(refused.status, 401, refused.text);
          await ended(cli.withPortal, 'no longer the owner at re-mint');
        });

        test('4: proxied answers without Cache-Control are private, no-store', async () => {
          const shop = await createPortalClient(server, 'Cached shop');
          const portal = await openLinkPortal(server, await issuePortalLink(server, shop));
          const list = await asBrowser(server, portal, 'GET', '/console/api/webhooks', {
            headers: { origin: server.url, 'x-signet-console-csrf': await csrfOf(server, portal) },
          });
          assert.equal(list.status, 200, list.text);
          assert.equal(list.headers.get('cache-control'), 'private, no-store');
          // What the API said itself is kept.
          const users = await asBrowser(server, cookie, 'GET', '/console/api/admin/users', {
            headers: { origin: server.url, 'x-signet-console-csrf': csrf },
          });
          assert.equal(users.headers.get('cache-control'), 'no-store');
        });

        test('5: the audit entry of an admin action through the console names the browser’s address', async () => {
          const client = await server.createClient({ name: 'Audited app' });
          const patch = await asBrowser(server, cookie, 'PATCH', `/console/api/admin/clients/${client.clientId}`, {
            body: JSON.stringify({ client_name: 'Audited app 2' }),
            contentType: 'application/merge-patch+json',
            headers: { origin: server.url, 'x-signet-console-csrf': csrf, 'x-forwarded-for': '203.0.113.9' },
          });
          assert.equal(patch.status, 200, patch.text);
          const entry = await server.app.database.db
            .selectFrom('audit_log')
            .select(['source_address', 'action'])
            .where('action', '=', 'client.updated')
            .where('target_id', '=', client.clientId)
            .executeTakeFirst();
          assert.equal(entry?.source_address, '203.0.113.9', JSON.stringify(entry));
        });

        test('6: an owner opens a portal although the session’s access token no longer works', async () => {
          const client = await createPortalClient(server, 'Expired token shop', admin.id);
          const id = (await cp.context.cookies(server.url)).find((c) => c.name === 'signet-console')!.value;
          const idHash = hashId(id);
          const key = consoleKey(
            resolveSecretKey(Buffer.from(TEST_WEBHOOK_SECRET_KEY, 'base64url'), server.databaseUrl),
          );
          const row = await server.app.database.db
            .selectFrom('console_sessions')
            .select('tokens')
            .where('id_hash', '=', idHash)
            .executeTakeFirstOrThrow();
          const tokens = JSON.parse(unseal(row.tokens, key, idHash)) as Record<string, string>;
          await server.app.database.db
            .updateTable('console_sessions')
            .set({ tokens: seal(JSON.stringify({ ...tokens, access: 'an.expired.token' }), key, idHash) })
            .where('id_hash', '=', idHash)
            .execute();
          const opened = await asBrowser(server, cookie, 'POST', '/console/portal-sessions', {
            body: JSON.stringify({ client_id: client.clientId }),
            headers: { origin: server.url, 'x-signet-console-csrf': csrf },
          });
          assert.equal(opened.status, 201, opened.text);
        });

        test('7: a repeated error parameter on the callback is a 400 page, not a 500', async () => {
          const login = await fetchWithin(`${server.url}/console/login`, { redirect: 'manual' });
          const state = new URL(login.headers.get('location')!, server.url).searchParams.get('state')!;
          const loginCookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
          const answer = await asBrowser(
            server,
            loginCookie,
            'GET',
            `/console/callback?state=${state}&error=a&error=b`,
          );
          assert.equal(answer.status, 400, answer.text);
          assert.match(answer.text, /Sign-in did not finish/);
        });

        test('8: a precompressed answer keeps CORS’s Vary: Origin', async () => {
          const css = await asBrowser(server, '', 'GET', '/console/assets/console.css', {
            headers: { origin: CORS_ORIGIN, 'accept-encoding': 'gzip' },
          });
          assert.equal(css.status, 200);
          const vary = (css.headers.get('vary') ?? '').toLowerCase();
          assert.match(vary, /origin/, vary);
          assert.match(vary, /accept-encoding/, vary);
        });

        test('11: migration 0012 indexes the column sign-out deletes by', async () => {
          const names =
            dialect === 'postgres'
              ? await server.app.database.db
                  .selectFrom('pg_indexes' as never)
                  .select('indexname as name' as never)
                  .where('tablename' as never, '=', 'console_portal_sessions' as never)
                  .execute()
              : await server.app.database.db
                  .selectFrom('sqlite_master' as never)
                  .select('name' as never)
                  .where('tbl_name' as never, '=', 'console_portal_sessions' as never)
                  .execute();
          const list = (names as { name: string }[]).map((n) => n.name);
          assert.ok(list.includes('console_portal_sessions_console_session_hash'), list.join(', '));
        });
      });
    }
  });
