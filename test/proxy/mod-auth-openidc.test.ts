// Apache mod_auth_openidc, an independent relying party left at its defaults, signs a user in against
// Signet's built-in issuer with the configuration docs/guides/signing-in-users.md prints (its one ```apache block, with
// only the host names replaced by the test's; the secrets come from the environment as the guide
// says). A browser is played by hand: cookies kept, redirects followed one by one, forms posted.
// Runs when apache2 and mod_auth_openidc are installed; with TEST_APACHE_REQUIRED=1 their absence fails.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { findApache, startApache, type ApacheInstallation, type RunningApache } from '../helpers/apache.ts';
import { freePort, startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { closeWithin, listenOnLoopback, withDeadline } from '../helpers/deadline.ts';
import { call, CALL_TIMEOUT_MS } from '../helpers/http.ts';

const GUIDE = new URL('../../docs/guides/signing-in-users.md', import.meta.url);
/** The host names the guide's block uses, replaced by the test's. */
const DOC_ISSUER = 'https://signet.example.com/oauth';
const DOC_APP = 'https://app.example.com';
const DOC_BACKEND = 'http://127.0.0.1:8080';
/** The path the guide's block protects, and its redirect URI inside it. */
const PROTECTED = '/protected/';
const REDIRECT_PATH = '/protected/redirect_uri';

/** The guide's one ```apache block, as printed. */
function guideApacheBlock(): string {
  const blocks = [...readFileSync(GUIDE, 'utf8').matchAll(/^```apache\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  assert.equal(
    blocks.length,
    1,
    'docs/guides/signing-in-users.md must hold exactly one ```apache block: the mod_auth_openidc configuration',
  );
  return blocks[0]!;
}

/** The guide's block with the test's hosts in place of the guide's; fails when the block no longer has them. */
function siteConfig(issuer: string, app: string, backend: string, extra: string[]): string {
  let conf = guideApacheBlock();
  for (const [from, to] of [
    [DOC_ISSUER, issuer],
    [DOC_APP, app],
    [DOC_BACKEND, backend],
  ] as const) {
    assert.ok(conf.includes(from), `the guide's apache block no longer names ${from}; update this test`);
    conf = conf.replaceAll(from, to);
  }
  for (const name of ['${SIGNET_CLIENT_ID}', '${SIGNET_CLIENT_SECRET}', '${OIDC_CRYPTO_PASSPHRASE}'])
    assert.ok(conf.includes(name), `the guide's apache block no longer reads ${name}; update this test`);
  return [conf, ...extra, ''].join('\n');
}

interface Echo {
  path: string;
  headers: Record<string, string>;
}

/** The application behind Apache: answers every request with the request headers it received, as JSON. */
async function startEchoBackend(): Promise<Backend> {
  const seen: Echo[] = [];
  const server: Server = createServer((req, res) => {
    const echo = { path: req.url ?? '', headers: req.headers as Record<string, string> };
    seen.push(echo);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(echo));
  });
  const port = await listenOnLoopback(server);
  return { url: `http://127.0.0.1:${port}`, seen, close: () => closeWithin(server, 'the echo backend') };
}

interface Backend {
  url: string;
  /** Every request the backend answered, in order. */
  seen: Echo[];
  close(): Promise<void>;
}

/** A browser's cookies for 127.0.0.1, which (cookies ignore ports) Apache and Signet share, as in a browser. */
class CookieJar {
  readonly #cookies = new Map<string, string>();
  store(headers: IncomingHttpHeaders): void {
    for (const header of headers['set-cookie'] ?? []) {
      const [pair = ''] = header.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970|max-age=0\b/i.test(header) || value === '') this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One request over a raw socket, `Connection: close`, read to the end and framed as a browser frames it:
 * the body is `Content-Length` bytes (or the chunks), whatever follows is ignored. Not fetch: fetch always
 * sends `Sec-Fetch-Mode: cors`, and mod_auth_openidc only starts a login for `navigate`. Not node:http
 * either: mod_auth_openidc 2.4.12 with `OIDCProviderAuthRequestMethod POST` writes the backend's answer
 * after its form page (CVE-2025-31492, see docs/guides/signing-in-users.md), which node:http refuses to parse.
 */
async function send(method: string, url: string, headers: Record<string, string>, body = ''): Promise<Answer> {
  const target = new URL(url);
  const socket = connect({ host: target.hostname, port: Number(target.port) });
  const head = [
    `${method} ${target.pathname}${target.search} HTTP/1.1`,
    `host: ${target.host}`,
    'connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ...(method === 'GET' ? [] : [`content-length: ${Buffer.byteLength(body)}`]),
  ];
  // write, not end: a server may drop a request whose client half-closed before it answered.
  socket.write(`${head.join('\r\n')}\r\n\r\n${body}`);
  const chunks: Buffer[] = [];
  const read = new Promise<Buffer>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => resolve(Buffer.concat(chunks)));
  });
  try {
    const raw = await withDeadline(
      read,
      CALL_TIMEOUT_MS,
      () => `${method} ${url}: no complete answer; so far:\n${Buffer.concat(chunks)}`,
    );
    return parseResponse(raw, `${method} ${url}`);
  } finally {
    socket.destroy();
  }
}

function parseResponse(raw: Buffer, what: string): Answer {
  const end = raw.indexOf('\r\n\r\n');
  assert.ok(end > 0, `${what}: no HTTP response head in ${raw.toString('latin1').slice(0, 500)}`);
  const [statusLine = '', ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
  assert.ok(status, `${what}: not a status line: ${statusLine}`);
  const headers: IncomingHttpHeaders = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'set-cookie') headers['set-cookie'] = [...(headers['set-cookie'] ?? []), value];
    else headers[name] = value;
  }
  let rest = raw.subarray(end + 4);
  let body: Buffer;
  if (/chunked/i.test(String(headers['transfer-encoding'] ?? ''))) {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      assert.ok(
        lineEnd > 0 && Number.isInteger(size),
        `${what}: a broken chunk in ${rest.toString('latin1').slice(0, 200)}`,
      );
      rest = rest.subarray(lineEnd + 2);
      if (size === 0) break;
      parts.push(rest.subarray(0, size));
      rest = rest.subarray(size + 2);
    }
    body = Buffer.concat(parts);
  } else if (headers['content-length'] !== undefined) {
    body = rest.subarray(0, Number(headers['content-length']));
  } else {
    body = rest;
  }
  return { status: Number(status), headers, body: body.toString('utf8') };
}

interface Page {
  url: string;
  status: number;
  contentType: string;
  body: string;
  /** Every request made on the way, `METHOD url`. */
  trail: string[];
}

const MAX_STEPS = 20;

/**
 * What a browser sends on a top-level navigation. mod_auth_openidc answers 401 instead of starting a login
 * for a request that does not look like one (`Sec-Fetch-Mode: cors`, an Accept without HTML).
 */
const NAVIGATION = {
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'document',
};

/**
 * Opens `start` as a browser would and returns the first page that is not a form to post: each redirect
 * is followed by hand, the login form gets the user's credentials, the consent form is allowed, and an
 * auto-submitting form (mod_auth_openidc's POST authorization request) is submitted as it stands.
 */
async function browse(start: string, jar: CookieJar, user: { email: string; password: string }): Promise<Page> {
  const trail: string[] = [];
  let next: { url: string; form?: URLSearchParams } = { url: start };
  for (let step = 0; step < MAX_STEPS; step += 1) {
    trail.push(`${next.form ? 'POST' : 'GET'} ${next.url}`);
    const response = await send(
      next.form ? 'POST' : 'GET',
      next.url,
      {
        ...NAVIGATION,
        cookie: jar.header(),
        ...(next.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      next.form?.toString(),
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; the requests so far:\n${trail.join('\n')}`, { cause: err });
    });
    jar.store(response.headers);
    const location = response.headers.location;
    if (location && response.status >= 300 && response.status < 400) {
      next = { url: new URL(location, next.url).href };
      continue;
    }
    const page: Page = {
      url: next.url,
      status: response.status,
      contentType: response.headers['content-type'] ?? '',
      body: response.body,
      trail,
    };
    const form = page.status === 200 && page.contentType.startsWith('text/html') ? formOf(page, user) : undefined;
    if (!form) return page;
    next = form;
  }
  throw new Error(`more than ${MAX_STEPS} steps:\n${trail.join('\n')}`);
}

/** The page's first POST form, filled in; undefined when there is none. */
function formOf(
  page: Page,
  user: { email: string; password: string },
): { url: string; form: URLSearchParams } | undefined {
  const formTag = /<form\b[^>]*>/i.exec(page.body)?.[0];
  if (!formTag || !/method=["']?post/i.test(formTag)) return undefined;
  const action = decodeHtml(attribute(formTag, 'action') ?? page.url);
  const form = new URLSearchParams();
  for (const input of page.body.matchAll(/<input\b[^>]*>/gi)) {
    const tag = input[0];
    const name = attribute(tag, 'name');
    if (!name || attribute(tag, 'type')?.toLowerCase() !== 'hidden') continue;
    form.append(decodeHtml(name), decodeHtml(attribute(tag, 'value') ?? ''));
  }
  if (/name="password"/.test(page.body)) {
    form.set('email', user.email);
    form.set('password', user.password);
  }
  return { url: new URL(action, page.url).href, form };
}

function attribute(tag: string, name: string): string | undefined {
  return new RegExp(`\\b${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, 'i')
    .exec(tag)
    ?.slice(1)
    .find((v) => v !== undefined);
}

function decodeHtml(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_m, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

const apache = findApache();

if (apache) {
  for (const dialect of testDialects())
    describe(`Apache mod_auth_openidc signs users in with the guide's configuration [${dialect}]`, () => {
      let server: AuthTestServer;
      let backend: Backend;
      before(async () => {
        server = await startAuthServer(dialect);
        backend = await startEchoBackend();
      });
      after(async () => {
        await backend?.close();
        await server?.close();
      });

      test('a login through Apache: authorize, login, consent, redirect_uri, and the protected page sees the user', async () => {
        const { echo, trail } = await loginThroughApache(apache, server, backend, []);
        assert.ok(trail[1]?.startsWith(`GET ${server.issuer}/authorize?`), trail.join('\n'));
        // Nothing reached the application before the login: every request it saw carried the user.
        assert.deepEqual(
          backend.seen.map((e) => e.headers.oidc_claim_sub),
          [echo.headers.oidc_claim_sub],
          JSON.stringify(backend.seen),
        );
      });

      test('with OIDCProviderAuthRequestMethod POST the authorization request is a form post, and the login works the same', async () => {
        // Not asserted here, and why the guide warns: mod_auth_openidc before 2.4.16.11 (Debian 12 ships
        // 2.4.12.3) also passes the not yet authenticated request to the application and appends its answer
        // to the form page (CVE-2025-31492). Signet's side, the POSTed authorization request, is what this proves.
        const { trail } = await loginThroughApache(apache, server, backend, ['OIDCProviderAuthRequestMethod POST']);
        assert.equal(trail[1], `POST ${server.issuer}/authorize`, trail.join('\n'));
      });
    });
} else if (process.env.TEST_APACHE_REQUIRED === '1') {
  test('apache2 and mod_auth_openidc are installed (TEST_APACHE_REQUIRED=1)', () => {
    assert.fail(
      'TEST_APACHE_REQUIRED=1 but no apache2 (or httpd) with mod_auth_openidc.so; apt-get install apache2 libapache2-mod-auth-openidc to run test/proxy/mod-auth-openidc.test.ts',
    );
  });
} else {
  test(
    'Apache mod_auth_openidc relying party',
    {
      skip: 'apache2 or mod_auth_openidc is not installed (apt-get install apache2 libapache2-mod-auth-openidc); TEST_APACHE_REQUIRED=1 makes this a failure',
    },
    () => {},
  );
}

/**
 * Registers a client as the guide says, starts Apache with the guide's block (plus `extra`), signs a new
 * user in through it, and checks what the protected application receives.
 */
async function loginThroughApache(
  installation: ApacheInstallation,
  server: AuthTestServer,
  backend: Backend,
  extra: string[],
): Promise<{ echo: Echo; trail: string[] }> {
  backend.seen.length = 0;
  const port = await freePort();
  const app = `http://127.0.0.1:${port}`;
  const client = await server.createClient({
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: [`${app}${REDIRECT_PATH}`],
    scopes: ['openid', 'profile', 'email', 'orders:read'],
  });
  const user = await server.createUser();
  let running: RunningApache | undefined;
  try {
    running = await startApache(installation, {
      port,
      site: siteConfig(server.issuer, app, backend.url, extra),
      env: {
        SIGNET_CLIENT_ID: client.clientId,
        SIGNET_CLIENT_SECRET: client.clientSecret!,
        OIDC_CRYPTO_PASSPHRASE: randomBytes(32).toString('base64url'),
      },
    });
    const page = await browse(`${app}${PROTECTED}`, new CookieJar(), user);
    const log = running.errorLog();
    assert.equal(page.status, 200, `the protected page: ${page.status} ${page.body.slice(0, 2000)}\n${log}`);
    assert.match(page.contentType, /^application\/json/, `${page.body.slice(0, 2000)}\n${log}`);
    const echo = JSON.parse(page.body) as Echo;
    assert.equal(echo.path, '/', 'Apache proxied the original request after the login');
    // mod_auth_openidc passes the claims as OIDC_CLAIM_<name> headers (Node lower-cases header names).
    assert.equal(echo.headers.oidc_claim_sub, user.id, JSON.stringify(echo.headers));
    assert.equal(echo.headers.oidc_claim_email, user.email, JSON.stringify(echo.headers));
    assert.equal(echo.headers.oidc_claim_name, user.name, JSON.stringify(echo.headers));
    // The access token it passes on is one the API accepts (the client is registered for orders:read).
    const token = echo.headers.oidc_access_token;
    assert.ok(token, `no OIDC_access_token header: ${JSON.stringify(echo.headers)}`);
    const orders = await call(server.url, 'GET', '/api/orders', { token });
    assert.equal(orders.status, 200, orders.text);
    // By default it also fetched userinfo with that token (a failure is logged at level error, and the
    // login would go on without userinfo's claims): nothing may have gone wrong.
    assert.doesNotMatch(log, /\[[a-z_]+:(?:error|crit|alert|emerg)\]/, `Apache's error log:\n${log}`);
    return { echo, trail: page.trail };
  } finally {
    await running?.stop();
  }
}
