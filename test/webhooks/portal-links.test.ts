// Portal links (docs/guides/portal.md, "Portal links"): POST /api/webhooks/portal-links issues a one-time URL
// for the calling client, valid 15 minutes, whose token is stored only as its SHA-256; consumePortalLink
// (the console's) uses it once, atomically, and refuses an expired, used or unknown one. Both audited.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { consumePortalLink, hashPortalToken } from '../../src/webhooks/api/portal-links.service.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const PATH = '/api/webhooks/portal-links';

for (const dialect of testDialects()) {
  describe(`portal links [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(dialect);
    });
    after(() => server.close());

    async function issue(clientId: string): Promise<{ token: string; url: string; expiresAt: Date }> {
      const token = await server.issuer.clientToken('webhooks:manage', clientId);
      const res = await call(server.url, 'POST', PATH, { token });
      assert.equal(res.status, 201, res.text);
      const url = String(res.json.Url);
      return { token: url.split('/').at(-1)!, url, expiresAt: new Date(res.json.ExpiresAt) };
    }

    const audit = (action: string, clientId: string) =>
      server.app.database.db
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', action)
        .where('actor_id', '=', clientId)
        .execute();

    test('issues a one-time URL for 15 minutes, no-store, keeping only the token’s SHA-256', async () => {
      const token = await server.issuer.clientToken('webhooks:manage', 'client-issue');
      const started = Date.now();
      const res = await call(server.url, 'POST', PATH, { token });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.match(res.json.Url, new RegExp(`^${server.url}/console/portal-links/[A-Za-z0-9_-]{43}$`), res.text);
      const lifetime = Date.parse(res.json.ExpiresAt) - started;
      assert.ok(lifetime > 14 * 60_000 && lifetime <= 15 * 60_000 + 5_000, res.text);
      const secret = String(res.json.Url).split('/').at(-1)!;
      const rows = await server.app.database.db.selectFrom('webhook_portal_links').selectAll().execute();
      const row = rows.find((r) => r.token_hash === hashPortalToken(secret));
      assert.ok(row, `the hash is stored: ${JSON.stringify(rows)}`);
      assert.equal(row.client_id, 'client-issue');
      assert.ok(!JSON.stringify(rows).includes(secret), 'the token itself is stored nowhere');
      const issued = await audit('portal_link.issued', 'client-issue');
      assert.equal(issued.length, 1, JSON.stringify(issued));
      assert.ok(!JSON.stringify(issued).includes(secret), 'nor in the audit trail');
      const empty = await call(server.url, 'POST', PATH, { token, body: {} });
      assert.equal(empty.status, 201, empty.text);
    });

    test('a link opens its own client once; a second use, an unknown or a malformed token are refused', async () => {
      const link = await issue('client-a');
      await issue('client-b');
      const now = new Date();
      assert.equal((await consumePortalLink(server.app.database.db, link.token, now))?.clientId, 'client-a');
      assert.equal(await consumePortalLink(server.app.database.db, link.token, now), undefined, 'used');
      const unknown = 'A'.repeat(43);
      assert.equal(await consumePortalLink(server.app.database.db, unknown, now), undefined, 'unknown');
      assert.equal(await consumePortalLink(server.app.database.db, `${link.token}x`, now), undefined, 'malformed');
      assert.equal(await consumePortalLink(server.app.database.db, '', now), undefined, 'empty');
      const used = await audit('portal_link.used', 'client-a');
      assert.equal(used.length, 1, JSON.stringify(used));
      assert.equal((await audit('portal_link.used', 'client-b')).length, 0);
    });

    test('an expired link is refused, even unused; one a moment before expiry works', async () => {
      const late = await issue('client-expiry');
      assert.equal(await consumePortalLink(server.app.database.db, late.token, late.expiresAt), undefined);
      assert.equal(
        await consumePortalLink(server.app.database.db, late.token, new Date(late.expiresAt.getTime() + 60_000)),
        undefined,
      );
      const early = await issue('client-expiry');
      const justBefore = new Date(early.expiresAt.getTime() - 1);
      assert.equal(
        (await consumePortalLink(server.app.database.db, early.token, justBefore))?.clientId,
        'client-expiry',
      );
    });

    test('20 concurrent uses of one link: exactly one succeeds', async () => {
      const link = await issue('client-race');
      const now = new Date();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => consumePortalLink(server.app.database.db, link.token, now)),
      );
      const successes = results.filter((r) => r !== undefined);
      assert.deepEqual(
        successes.map((s) => s.clientId),
        ['client-race'],
        JSON.stringify(results),
      );
      assert.equal((await audit('portal_link.used', 'client-race')).length, 1);
    });

    test('refuses: no token 401, events:read only 403, an end-user token 403, text/plain 415, members 422', async () => {
      expectProblem(await call(server.url, 'POST', PATH), 401, 'unauthorized');
      const reader = await server.issuer.clientToken('events:read');
      expectProblem(await call(server.url, 'POST', PATH, { token: reader }), 403, 'insufficient-scope');
      const user = await server.issuer.userToken('webhooks:manage');
      expectProblem(await call(server.url, 'POST', PATH, { token: user, body: { x: 1 } }), 403, 'forbidden');
      const manager = await server.issuer.clientToken('webhooks:manage');
      expectProblem(
        await call(server.url, 'POST', PATH, { token: manager, rawBody: 'hello', contentType: 'text/plain' }),
        415,
        'unsupported-media-type',
      );
      const members = await call(server.url, 'POST', PATH, { token: manager, body: { ClientId: 'someone-else' } });
      expectProblem(members, 422, 'validation-error');
      expectProblem(
        await call(server.url, 'POST', PATH, { token: manager, rawBody: '{', contentType: 'application/json' }),
        400,
        'malformed-body',
      );
    });

    test('the operation is in the OpenAPI document with its example and problem answers', async () => {
      const doc = (await call(server.url, 'GET', '/openapi.json')).json;
      const op = doc.paths['/api/webhooks/portal-links'].post;
      assert.deepEqual(op.security, [{ bearer: ['webhooks:manage'] }]);
      for (const status of ['400', '401', '403', '415', '422'])
        assert.ok(
          op.responses[status]?.content?.['application/problem+json'],
          `${status}: ${JSON.stringify(op.responses)}`,
        );
      const created = op.responses['201'];
      assert.ok(JSON.stringify(created).includes('/console/portal-links/'), JSON.stringify(created));
    });
  });
}
