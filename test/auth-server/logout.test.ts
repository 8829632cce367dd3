// RP-initiated logout end to end (OpenID Connect RP-Initiated Logout 1.0): a client registered with
// `signet client create --post-logout-redirect-uri` signs a user in with openid-client, sends the
// browser to openid-client's buildEndSessionUrl (GET, or the same parameters POSTed as a form), the user
// confirms on Signet's logout page (its form and xsrf token, real HTTP with cookies), and the browser
// lands on the registered URI with `state`; the session is gone. An unregistered URI is refused.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import { discover } from '../helpers/openid-client.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { TEST_WEBHOOK_SECRET_KEY, testDialects } from '../helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome } from '../helpers/deadline.ts';
import { expectStatus } from '../helpers/expect.ts';
import { fetchWithin } from '../helpers/http.ts';
import { CookieJar, runAuthorizationFlow } from '../helpers/oauth-flow.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const LOGGED_OUT = 'http://127.0.0.1:9/logged-out';
const ALSO_LOGGED_OUT = 'https://app.example/bye';

type TestUser = Awaited<ReturnType<AuthTestServer['createUser']>>;

function signet(server: AuthTestServer, args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], {
    env: {
      ...process.env,
      LOG_LEVEL: 'silent',
      DATABASE_URL: server.databaseUrl,
      WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
    },
    encoding: 'utf8',
    timeout: COMMAND_TIMEOUT_MS,
  });
}

const CREATE = [
  'client',
  'create',
  '--name',
  'Shop front',
  '--type',
  'confidential',
  '--grant',
  'authorization_code,refresh_token',
  '--redirect-uri',
  REDIRECT_URI,
];

function decodeEntities(text: string): string {
  return text.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c)));
}

/** Signs the user in through openid-client's authorization URL; the jar then holds the session cookie. */
async function signIn(server: AuthTestServer, config: client.Configuration, user: TestUser, jar: CookieJar) {
  const pkceCodeVerifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    scope: 'openid profile email',
    code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: 'S256',
    redirect_uri: REDIRECT_URI,
  });
  const { callback } = await runAuthorizationFlow({
    base: server.url,
    authorizeQuery: url.search.slice(1),
    email: user.email,
    password: user.password,
    jar,
  });
  return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier, idTokenExpected: true });
}

/** GET with the jar's cookies, no redirect followed. */
async function browse(url: URL | string, jar: CookieJar, init: RequestInit = {}): Promise<Response> {
  const response = await fetchWithin(url, {
    redirect: 'manual',
    ...init,
    headers: { cookie: jar.header(), ...(init.headers as Record<string, string> | undefined) },
  });
  jar.store(response);
  return response;
}

/** The logout page's form submitted with "Sign out" (name=logout value=yes), as a browser would. */
async function confirmLogout(page: Response, jar: CookieJar): Promise<Response> {
  const html = await page.text();
  assert.equal(page.status, 200, html);
  assert.match(html, /Sign out of Signet\?/, html);
  const action = /<form id="op.logoutForm" method="post" action="([^"]+)"/.exec(html)?.[1];
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
  assert.ok(action && xsrf, `the logout page has its form and xsrf token: ${html}`);
  assert.match(html, /<button type="submit" form="op.logoutForm" name="logout" value="yes"/);
  return browse(new URL(decodeEntities(action), page.url), jar, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf, logout: 'yes' }).toString(),
  });
}

/** prompt=none answers login_required once the session is gone (OIDC Core §3.1.2.6). */
async function silentAuthorization(server: AuthTestServer, config: client.Configuration, jar: CookieJar) {
  const url = client.buildAuthorizationUrl(config, {
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
    redirect_uri: REDIRECT_URI,
    prompt: 'none',
  });
  const response = await browse(url, jar);
  await response.arrayBuffer();
  let location = new URL(response.headers.get('location') ?? '', server.url);
  // oidc-provider resumes the request at /authorize/:uid before answering the client.
  for (let hop = 0; hop < 3 && location.href.startsWith(server.url); hop += 1) {
    const next = await browse(location, jar);
    await next.arrayBuffer();
    location = new URL(next.headers.get('location') ?? '', server.url);
  }
  return location;
}

for (const dialect of testDialects()) {
  describe(`RP-initiated logout [${dialect}]`, () => {
    let server: AuthTestServer;
    let user: TestUser;
    let clientId: string;
    let config: client.Configuration;

    before(async () => {
      server = await startAuthServer(dialect);
      user = await server.createUser();
      const created = signet(server, [
        ...CREATE,
        '--post-logout-redirect-uri',
        LOGGED_OUT,
        '--post-logout-redirect-uri',
        ALSO_LOGGED_OUT,
        '--json',
      ]);
      assert.equal(created.status, 0, outcome(created));
      const json = JSON.parse(created.stdout) as Record<string, unknown>;
      assert.deepEqual(json.post_logout_redirect_uris, [LOGGED_OUT, ALSO_LOGGED_OUT], created.stdout);
      clientId = String(json.client_id);
      config = await discover(server, { clientId, clientSecret: String(json.client_secret) });
    });
    after(() => server.close());

    test('client create refuses post-logout redirect URIs the redirect URI rules refuse', () => {
      const cases: [string[], RegExp][] = [
        [['--post-logout-redirect-uri', 'not-a-url'], /--post-logout-redirect-uri not-a-url is not an absolute URL/],
        [['--post-logout-redirect-uri', 'http://app.example/bye'], /must use https/],
        [['--post-logout-redirect-uri', 'https://app.example/bye#x'], /must not contain a fragment/],
      ];
      for (const [extra, message] of cases) {
        const result = signet(server, [...CREATE, ...extra]);
        assert.equal(result.status, 2, outcome(result));
        assert.match(result.stderr, message, outcome(result));
      }
      const noBrowser = signet(server, [
        'client',
        'create',
        '--name',
        'Machine',
        '--type',
        'confidential',
        '--grant',
        'client_credentials',
        '--post-logout-redirect-uri',
        LOGGED_OUT,
      ]);
      assert.equal(noBrowser.status, 2, outcome(noBrowser));
      assert.match(noBrowser.stderr, /only applies to clients with the authorization_code grant/);
    });

    test('buildEndSessionUrl with post_logout_redirect_uri and state: the user confirms, lands there with state, and the session is over', async () => {
      const jar = new CookieJar();
      const tokens = await signIn(server, config, user, jar);
      const before = await silentAuthorization(server, config, jar);
      assert.ok(before.searchParams.get('code'), `signed in, prompt=none gets a code: ${before.href}`);

      const state = client.randomState();
      const endSession = client.buildEndSessionUrl(config, {
        post_logout_redirect_uri: LOGGED_OUT,
        state,
        id_token_hint: tokens.id_token!,
      });
      const page = await browse(endSession, jar);
      assert.match(
        page.headers.get('content-security-policy') ?? '',
        /form-action 'self' http:\/\/127\.0\.0\.1:9[;\s]/,
        'the confirmation form may end its redirect chain on the post-logout URI',
      );
      const confirmed = await confirmLogout(page, jar);
      const body = await confirmed.text();
      assert.equal(confirmed.status, 303, body);
      const landed = new URL(confirmed.headers.get('location') ?? '');
      assert.equal(`${landed.origin}${landed.pathname}`, LOGGED_OUT);
      assert.equal(landed.searchParams.get('state'), state);

      const after = await silentAuthorization(server, config, jar);
      assert.equal(after.searchParams.get('error'), 'login_required', `the session has ended: ${after.href}`);
    });

    test('POST /oauth/session/end with the same parameters as a form works like the GET', async () => {
      const jar = new CookieJar();
      await signIn(server, config, user, jar);
      const state = client.randomState();
      const parameters = new URLSearchParams({ client_id: clientId, post_logout_redirect_uri: ALSO_LOGGED_OUT, state });
      const posted = await browse(`${server.issuer}/session/end`, jar, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: parameters.toString(),
      });
      await expectStatus(posted, 303);
      const get = new URL(posted.headers.get('location') ?? '', server.url);
      assert.equal(`${get.origin}${get.pathname}`, `${server.issuer}/session/end`);
      assert.deepEqual([...get.searchParams].sort(), [...parameters].sort());
      const confirmed = await confirmLogout(await browse(get, jar), jar);
      await confirmed.arrayBuffer();
      assert.equal(confirmed.status, 303);
      const landed = new URL(confirmed.headers.get('location') ?? '');
      assert.equal(`${landed.origin}${landed.pathname}`, ALSO_LOGGED_OUT);
      assert.equal(landed.searchParams.get('state'), state);
      const after = await silentAuthorization(server, config, jar);
      assert.equal(after.searchParams.get('error'), 'login_required', after.href);
    });

    test('an unregistered post_logout_redirect_uri is refused with an error page, never a redirect', async () => {
      const jar = new CookieJar();
      await signIn(server, config, user, jar);
      for (const uri of ['https://evil.example/bye', `${LOGGED_OUT}/more`]) {
        const response = await browse(
          client.buildEndSessionUrl(config, { post_logout_redirect_uri: uri, state: 'x' }),
          jar,
        );
        const html = await response.text();
        assert.equal(response.status, 400, html);
        assert.equal(response.headers.get('location'), null);
        assert.match(html, /post_logout_redirect_uri not registered/);
      }
      const still = await silentAuthorization(server, config, jar);
      assert.ok(still.searchParams.get('code'), `the session is untouched: ${still.href}`);
    });
  });
}
