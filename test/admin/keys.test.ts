// Signing keys through the admin API (docs/guides/admin-api.md, Signing keys): listed without their
// material; rotated with the function `signet keys rotate` uses, after which this instance publishes the
// new key at /oauth/jwks at once and keeps signing with the old one until KEY_ROTATION_DELAY has passed,
// then signs with the new one; the rotation is audited with the admin as actor.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call } from '../helpers/http.ts';
import { jwtParts, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

for (const dialect of testDialects()) {
  describe(`admin API: signing keys [${dialect}]`, () => {
    let server: AuthTestServer;
    let ops: { clientId: string; clientSecret: string | undefined };

    before(async () => {
      // An hour: long enough that the new keys are still pending whenever this test looks.
      server = await startAuthServer(dialect, { KEY_ROTATION_DELAY: '1h' });
      ops = await server.createClient({
        scopes: ['admin:read', 'admin:write', 'orders:read'],
        grantTypes: ['client_credentials'],
      });
    });
    after(() => server.close());

    async function token(scope: string): Promise<string> {
      const issued = await tokenRequest(server, {
        grant_type: 'client_credentials',
        scope,
        client_id: ops.clientId,
        client_secret: ops.clientSecret!,
      });
      return tokenFrom(issued, 'access_token', `client credentials for ${scope}`);
    }

    test('lists the keys without private material, rotates: the new keys are published at once and pending, the old ones still sign', async () => {
      const admin = await token('admin:read admin:write');
      const before = await call(server.url, 'GET', '/api/admin/keys', { token: admin });
      assert.equal(before.status, 200, before.text);
      assert.ok(!/"(d|p|q|dp|dq|qi|k|material)"/.test(before.text), `no key material: ${before.text}`);
      const current = before.json.Items.filter(
        (k: { Use: string; State: string }) => k.Use === 'jws' && k.State === 'signing',
      );
      assert.ok(current.length > 0, before.text);
      const signedBefore = jwtParts(await token('orders:read')).header.kid;

      const rotated = await call(server.url, 'POST', '/api/admin/keys/rotate', { token: admin });
      assert.equal(rotated.status, 200, rotated.text);
      const kids = rotated.json.Kids as string[];
      assert.ok(kids.length > 0, rotated.text);
      const activatesAt = rotated.json.ActivatesAtUtc as string;
      assert.ok(
        Date.parse(activatesAt) > Date.now() + 30 * 60_000,
        `activates after KEY_ROTATION_DELAY: ${rotated.text}`,
      );
      type Key = { Kid: string; State: string; ActivatesAtUtc: string; RetiredAtUtc: string | null };
      const items = rotated.json.Items as Key[];
      for (const kid of kids) {
        const key = items.find((k) => k.Kid === kid);
        assert.ok(key?.State === 'pending' && key.ActivatesAtUtc === activatesAt, `${kid} pending: ${rotated.text}`);
      }
      for (const old of current) {
        const key = items.find((k) => k.Kid === old.Kid);
        assert.ok(
          key?.State === 'signing' && key.RetiredAtUtc === activatesAt,
          `${old.Kid} signs until then: ${rotated.text}`,
        );
      }

      const jwks = await call(server.url, 'GET', '/oauth/jwks');
      const published = (jwks.json.keys as { kid: string }[]).map((k) => k.kid);
      for (const kid of [...kids, ...current.map((k: { Kid: string }) => k.Kid)])
        assert.ok(published.includes(kid), `${kid} published: ${jwks.text}`);

      const fresh = await token('orders:read');
      assert.equal(
        jwtParts(fresh).header.kid,
        signedBefore,
        'still signed with the old key while the new one is pending',
      );

      const audit = await call(server.url, 'GET', '/api/admin/audit?action=keys.rotated', { token: admin });
      assert.equal(audit.status, 200, audit.text);
      assert.equal(audit.json.Items.length, 1, audit.text);
      assert.deepEqual(audit.json.Items[0].Actor, { Type: 'client', Id: ops.clientId }, audit.text);
    });

    test('a token without the admin scopes is refused (403)', async () => {
      const outsider = await token('orders:read');
      for (const [method, path] of [
        ['GET', '/api/admin/keys'],
        ['POST', '/api/admin/keys/rotate'],
      ] as const) {
        const refused = await call(server.url, method, path, { token: outsider });
        assert.equal(refused.status, 403, `${method} ${path}: ${refused.text}`);
      }
      const reader = await token('admin:read');
      const refused = await call(server.url, 'POST', '/api/admin/keys/rotate', { token: reader });
      assert.equal(refused.status, 403, refused.text);
    });
  });
}

for (const dialect of testDialects()) {
  describe(`admin API: a rotation takes effect after KEY_ROTATION_DELAY [${dialect}]`, () => {
    let server: AuthTestServer;
    let ops: { clientId: string; clientSecret: string | undefined };

    before(async () => {
      server = await startAuthServer(dialect, { KEY_ROTATION_DELAY: '1s' });
      ops = await server.createClient({
        scopes: ['admin:read', 'admin:write', 'orders:read'],
        grantTypes: ['client_credentials'],
      });
    });
    after(() => server.close());

    test('this instance switches to the new key on its own timer, and the old one stays published as retired', async () => {
      const issue = async (scope: string) =>
        tokenFrom(
          await tokenRequest(server, {
            grant_type: 'client_credentials',
            scope,
            client_id: ops.clientId,
            client_secret: ops.clientSecret!,
          }),
        );
      const admin = await issue('admin:read admin:write');
      const oldKid = String(jwtParts(admin).header.kid);
      const rotated = await call(server.url, 'POST', '/api/admin/keys/rotate', { token: admin });
      assert.equal(rotated.status, 200, rotated.text);
      const kids = rotated.json.Kids as string[];
      let kid = oldKid;
      await waitUntil(
        async () => kids.includes((kid = String(jwtParts(await issue('orders:read')).header.kid))),
        20_000,
        () => `a token signed with one of ${kids.join(', ')} (last: ${kid})`,
      );
      const listed = await call(server.url, 'GET', '/api/admin/keys', { token: admin });
      const states = Object.fromEntries(
        (listed.json.Items as { Kid: string; State: string }[]).map((k) => [k.Kid, k.State]),
      );
      assert.equal(states[oldKid], 'retired', listed.text);
      for (const fresh of kids) assert.equal(states[fresh], 'signing', listed.text);
      const jwks = await call(server.url, 'GET', '/oauth/jwks');
      assert.ok(jwks.text.includes(oldKid), `the retired key stays published: ${jwks.text}`);
      const before = await call(server.url, 'GET', '/api/admin/keys', { token: admin });
      assert.equal(before.status, 200, `a token signed before the rotation still works: ${before.text}`);
    });
  });
}
