// Signing keys through the admin API (docs/guides/admin-api.md, Signing keys): listed without their
// material; rotated with the function `signet keys rotate` uses, after which this instance publishes the
// new key at /oauth/jwks and signs with it at once; the rotation is audited with the admin as actor.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { call } from '../helpers/http.ts';
import { jwtParts, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

for (const dialect of testDialects()) {
  describe(`admin API: signing keys [${dialect}]`, () => {
    let server: AuthTestServer;
    let ops: { clientId: string; clientSecret: string | undefined };

    before(async () => {
      server = await startAuthServer(dialect);
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

    test('lists the keys without private material, rotates, and signs with the new key at once', async () => {
      const admin = await token('admin:read admin:write');
      const before = await call(server.url, 'GET', '/api/admin/keys', { token: admin });
      assert.equal(before.status, 200, before.text);
      assert.ok(!/"(d|p|q|dp|dq|qi|k|material)"/.test(before.text), `no key material: ${before.text}`);
      const current = before.json.Items.filter(
        (k: { Use: string; RetiredAtUtc: unknown }) => k.Use === 'jws' && !k.RetiredAtUtc,
      );
      assert.ok(current.length > 0, before.text);

      const rotated = await call(server.url, 'POST', '/api/admin/keys/rotate', { token: admin });
      assert.equal(rotated.status, 200, rotated.text);
      const kids = rotated.json.Kids as string[];
      assert.ok(kids.length > 0, rotated.text);
      for (const old of current)
        assert.ok(
          rotated.json.Items.some((k: { Kid: string; RetiredAtUtc: unknown }) => k.Kid === old.Kid && k.RetiredAtUtc),
          `the old key ${old.Kid} is listed as retired: ${rotated.text}`,
        );

      const jwks = await call(server.url, 'GET', '/oauth/jwks');
      const published = (jwks.json.keys as { kid: string }[]).map((k) => k.kid);
      for (const kid of [...kids, ...current.map((k: { Kid: string }) => k.Kid)])
        assert.ok(published.includes(kid), `${kid} published: ${jwks.text}`);

      const fresh = await token('orders:read');
      assert.ok(
        kids.includes(String(jwtParts(fresh).header.kid)),
        `signed with a new key: ${jwtParts(fresh).header.kid}`,
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
