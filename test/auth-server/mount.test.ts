// The issuer's mount (src/auth-server/provider/mount.ts): middie's engine runs only for URLs that could reach the
// mount, and that pre-check never turns away a URL the engine would have matched, however it is spelled.
import assert from 'node:assert/strict';
import http from 'node:http';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { mayReachMount } from '../../src/auth-server/provider/mount.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { CALL_TIMEOUT_MS } from '../helpers/http.ts';

const require = createRequire(import.meta.url);
type Engine = {
  use(path: string, fn: () => void): void;
  run(req: object, res: object, done: (err?: unknown) => void): void;
};
const createEngine = require('@fastify/middie/lib/engine') as (complete: (...args: unknown[]) => void) => Engine;

/** Whether middie's engine itself matches `url` to `mount` (the library's own answer, no HTTP). */
function engineMatches(mount: string, url: string): boolean {
  let matched = false;
  const engine = createEngine((_err, _req, _res, done) => (done as () => void)());
  engine.use(mount, () => {
    matched = true;
  });
  engine.run({ url }, { finished: false, writableEnded: false }, () => undefined);
  return matched;
}

const SPELLINGS = [
  '/oauth',
  '/oauth/',
  '/oauth/token',
  '/OAUTH/token',
  '/oAuth/.well-known/openid-configuration',
  '/%6Fauth/token',
  '/%256Fauth/token',
  '/oauth%2Ftoken',
  '/oauth?x=1',
  '/oauth;a=b/token',
  'http://127.0.0.1:1/oauth/token',
  'HTTP://example.test/OAuth/jwks',
  '*',
  '/api/orders',
  '/api/orders/1?fields=id',
  '/oauthx/token',
  '//oauth/token',
  '/console/oauth',
  '/.well-known/oauth-authorization-server/oauth',
];

describe('the mount pre-check', () => {
  test("every URL middie's engine matches to the mount passes the pre-check", () => {
    const reached = SPELLINGS.filter((url) => engineMatches('/oauth', url));
    assert.ok(reached.length >= 8, `the engine matched only: ${reached.join(' ')}`);
    for (const url of reached) assert.ok(mayReachMount(url, '/oauth'), `${url} reaches the mount but was turned away`);
  });

  test("the API's plain paths skip the engine", () => {
    for (const url of ['/api/orders', '/api/orders/1?fields=id', '/healthz', '/console/oauth', '/api/x'])
      assert.equal(mayReachMount(url, '/oauth'), false, url);
    assert.equal(engineMatches('/oauth', '/api/orders'), false);
  });
});

describe('oidc-provider behind the mount, over HTTP', () => {
  let server: AuthTestServer;
  before(async () => {
    server = await startAuthServer('sqlite');
  });
  after(() => server.stop());

  /** GET with the request target exactly as given (absolute-form included). */
  function getTarget(target: string): Promise<{ status: number; body: string }> {
    const { port } = new URL(server.url);
    return new Promise((resolve, reject) => {
      const request = http.get({ host: '127.0.0.1', port, path: target, timeout: CALL_TIMEOUT_MS }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on('timeout', () => request.destroy(new Error(`no answer for ${target}`)));
      request.on('error', reject);
    });
  }

  test('discovery is served on every spelling the engine matches', async () => {
    const { port } = new URL(server.url);
    for (const target of [
      '/oauth/.well-known/openid-configuration',
      '/OAUTH/.well-known/openid-configuration',
      '/%6Fauth/.well-known/openid-configuration',
      `http://127.0.0.1:${port}/oauth/.well-known/openid-configuration`,
    ]) {
      const { status, body } = await getTarget(target);
      assert.equal(status, 200, `${target}: ${body}`);
      assert.equal((JSON.parse(body) as { issuer?: string }).issuer, server.issuer, target);
    }
  });

  test("an API path is not the provider's: the API answers it", async () => {
    const { status, body } = await getTarget('/api/orders');
    assert.equal(status, 401, body);
    assert.match(body, /"status":401/);
  });
});
