// Tokens Signet mints for its own console (src/auth-server/tokens/console-tokens.ts): the integrator portal acts as
// one client on the webhook API with a token shaped exactly like that client's client_credentials token
// (issuer, audience, lifetime, JWT header), carrying only the scopes asked for, within the client's own.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConsoleTokenError, issueClientAccessToken } from '../../src/auth-server/tokens/console-tokens.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { jwtParts, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

const WEBHOOK_ENV = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOWED_NETWORKS: 'loopback', WEBHOOK_DISPATCHER: 'false' };

for (const dialect of testDialects()) {
  describe(`console tokens for a client [${dialect}]`, () => {
    let server: AuthTestServer;
    let a: Awaited<ReturnType<AuthTestServer['createClient']>>;
    let b: Awaited<ReturnType<AuthTestServer['createClient']>>;
    before(async () => {
      server = await startAuthServer(dialect, WEBHOOK_ENV);
      const machine = {
        grantTypes: ['client_credentials' as const],
        redirectUris: [],
        scopes: ['webhooks:manage', 'events:read'],
      };
      a = await server.createClient(machine);
      b = await server.createClient(machine);
    });
    after(() => server.close());

    const provider = () => server.app.authServer!.provider;
    const register = (token: string) =>
      call(server.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: 'http://127.0.0.1:9/hook', Events: ['order.created'] },
      });

    test('the token has the client_credentials token’s shape: issuer, audience, subject, lifetime, header', async () => {
      const granted = tokenFrom(
        await tokenRequest(server, {
          grant_type: 'client_credentials',
          client_id: a.clientId,
          client_secret: a.clientSecret!,
          scope: 'webhooks:manage',
        }),
      );
      const minted = await issueClientAccessToken(provider(), a.clientId, ['webhooks:manage']);
      const g = jwtParts(granted);
      const m = jwtParts(minted.accessToken);
      assert.deepEqual(
        { typ: m.header.typ, alg: m.header.alg, kid: m.header.kid },
        { typ: g.header.typ, alg: g.header.alg, kid: g.header.kid },
      );
      for (const claim of ['iss', 'aud', 'sub', 'client_id', 'scope'])
        assert.deepEqual(m.payload[claim], g.payload[claim], `${claim}: ${JSON.stringify(m.payload)}`);
      assert.equal(
        (m.payload.exp as number) - (m.payload.iat as number),
        (g.payload.exp as number) - (g.payload.iat as number),
      );
      assert.equal(minted.scope, 'webhooks:manage');
      assert.equal(minted.expiresIn, (m.payload.exp as number) - (m.payload.iat as number));
    });

    test('works on /api/webhooks for its client’s endpoints only: another client’s endpoint is a 404', async () => {
      const forA = (await issueClientAccessToken(provider(), a.clientId, ['webhooks:manage'])).accessToken;
      const forB = (await issueClientAccessToken(provider(), b.clientId, ['webhooks:manage'])).accessToken;
      const mine = await register(forA);
      assert.equal(mine.status, 201, mine.text);
      const theirs = await register(forB);
      assert.equal(theirs.status, 201, theirs.text);
      const list = await call(server.url, 'GET', '/api/webhooks', { token: forA });
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(
        list.json.Items.map((e: { Id: string }) => e.Id),
        [mine.json.Id],
      );
      expectStatus404(await call(server.url, 'GET', `/api/webhooks/${theirs.json.Id}`, { token: forA }));
      expectStatus404(await call(server.url, 'DELETE', `/api/webhooks/${theirs.json.Id}`, { token: forA }));
      const read = await call(server.url, 'GET', `/api/webhooks/${mine.json.Id}`, { token: forA });
      assert.equal(read.status, 200, read.text);
    });

    test('carries only the scopes asked for', async () => {
      const eventsOnly = (await issueClientAccessToken(provider(), a.clientId, ['events:read'])).accessToken;
      assert.equal(jwtParts(eventsOnly).payload.scope, 'events:read');
      expectProblem(await call(server.url, 'GET', '/api/webhooks', { token: eventsOnly }), 403, 'insufficient-scope');
      const events = await call(server.url, 'GET', '/api/events', { token: eventsOnly });
      assert.equal(events.status, 200, events.text);
      const both = await issueClientAccessToken(provider(), a.clientId, ['webhooks:manage', 'events:read']);
      assert.equal(both.scope, 'webhooks:manage events:read');
    });

    test('refuses a scope outside the client’s, an OIDC scope, none at all, and an unknown client', async () => {
      await assert.rejects(
        issueClientAccessToken(provider(), a.clientId, ['webhooks:manage', 'orders:write']),
        (err: unknown) => err instanceof ConsoleTokenError && /orders:write/.test(err.message),
      );
      await assert.rejects(issueClientAccessToken(provider(), a.clientId, ['openid']), ConsoleTokenError);
      const web = await server.createClient({ scopes: ['openid', 'webhooks:manage'] });
      await assert.rejects(issueClientAccessToken(provider(), web.clientId, ['openid']), ConsoleTokenError);
      assert.equal(
        (await issueClientAccessToken(provider(), web.clientId, ['webhooks:manage'])).scope,
        'webhooks:manage',
      );
      await assert.rejects(issueClientAccessToken(provider(), a.clientId, ['admin:write']), ConsoleTokenError);
      await assert.rejects(issueClientAccessToken(provider(), a.clientId, []), ConsoleTokenError);
      await assert.rejects(
        issueClientAccessToken(provider(), 'cl_nobody', ['webhooks:manage']),
        (err: unknown) => err instanceof ConsoleTokenError && /no client cl_nobody/.test(err.message),
      );
    });
  });
}

function expectStatus404(res: { status: number; text: string }): void {
  assert.equal(res.status, 404, res.text);
}
