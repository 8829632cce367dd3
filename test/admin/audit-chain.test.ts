// The audit trail is tamper-evident (docs/security.md, "Audit integrity"): entries written concurrently
// form one hash chain; an UPDATE or a DELETE made on audit_log directly, around Signet, is found by
// GET /api/admin/audit/verify and `signet audit verify`, which name the entry where the chain breaks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { TEST_WEBHOOK_SECRET_KEY, testDialects } from '../helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome } from '../helpers/deadline.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;

async function tokenFor(server: AuthTestServer, scope: string): Promise<string> {
  const ops = await server.createClient({ scopes: scope.split(' '), grantTypes: ['client_credentials'] });
  return tokenFrom(
    await tokenRequest(server, {
      grant_type: 'client_credentials',
      scope,
      client_id: ops.clientId,
      client_secret: ops.clientSecret!,
    }),
  );
}

for (const dialect of testDialects()) {
  describe(`the audit trail's hash chain [${dialect}]`, () => {
    let server: AuthTestServer;
    let admin: string;
    before(async () => {
      server = await startAuthServer(dialect);
      admin = await tokenFor(server, 'admin:read admin:write');
    });
    after(() => server.close());

    const verify = async () => {
      const res = await call(server.url, 'GET', '/api/admin/audit/verify', { token: admin });
      expectStatus(res, 200, 'verify');
      return res.json as { Intact: boolean; Checked: number; Broken: { Id: string; Reason: string } | null };
    };
    const verifyWithCli = () =>
      spawnSync(process.execPath, [BIN, 'audit', 'verify', '--json'], {
        env: {
          ...process.env,
          LOG_LEVEL: 'silent',
          DATABASE_URL: server.databaseUrl,
          WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
        },
        encoding: 'utf8',
        timeout: COMMAND_TIMEOUT_MS,
      });
    const entries = () =>
      server.app.database.db.selectFrom('audit_log').select(['id', 'details']).orderBy('seq').execute();

    test('entries written concurrently form one intact chain', async () => {
      const created = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          call(server.url, 'POST', '/api/admin/users', {
            token: admin,
            body: {
              Email: `chain-${i}-${Date.now()}@example.test`,
              Name: `Chain ${i}`,
              Password: `a long password ${i}`,
            },
          }),
        ),
      );
      for (const res of created) expectStatus(res, 201, 'create a user');
      const verdict = await verify();
      assert.equal(verdict.Intact, true, JSON.stringify(verdict));
      assert.ok(verdict.Checked >= 12, JSON.stringify(verdict));
      assert.equal(verdict.Broken, null);
      const cli = verifyWithCli();
      assert.equal(cli.status, 0, outcome(cli));
      assert.equal((JSON.parse(cli.stdout) as { intact: boolean }).intact, true, cli.stdout);
    });

    test('an UPDATE on audit_log is found, naming the entry', async () => {
      const rows = await entries();
      const target = rows[Math.floor(rows.length / 2)]!;
      await server.app.database.db
        .updateTable('audit_log')
        .set({ details: '{"rewritten":true}' })
        .where('id', '=', target.id)
        .execute();
      const verdict = await verify();
      assert.deepEqual(
        [verdict.Intact, verdict.Broken],
        [false, { Id: target.id, Reason: 'altered' }],
        JSON.stringify(verdict),
      );
      const cli = verifyWithCli();
      assert.equal(cli.status, 1, outcome(cli));
      const json = JSON.parse(cli.stdout) as { broken: { id: string; reason: string } };
      assert.deepEqual([json.broken.id, json.broken.reason], [target.id, 'altered'], cli.stdout);
      // Put back as it was: the chain holds again.
      await server.app.database.db
        .updateTable('audit_log')
        .set({ details: target.details })
        .where('id', '=', target.id)
        .execute();
      assert.equal((await verify()).Intact, true);
    });

    test('a DELETE on audit_log is found, naming the entry after the gap', async () => {
      const rows = await entries();
      const index = Math.floor(rows.length / 2);
      const [deleted, following] = [rows[index]!, rows[index + 1]!];
      await server.app.database.db.deleteFrom('audit_log').where('id', '=', deleted.id).execute();
      const verdict = await verify();
      assert.deepEqual(
        [verdict.Intact, verdict.Broken],
        [false, { Id: following.id, Reason: 'unlinked' }],
        JSON.stringify(verdict),
      );
      const cli = spawnSync(process.execPath, [BIN, 'audit', 'verify'], {
        env: {
          ...process.env,
          LOG_LEVEL: 'silent',
          DATABASE_URL: server.databaseUrl,
          WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
        },
        encoding: 'utf8',
        timeout: COMMAND_TIMEOUT_MS,
      });
      assert.equal(cli.status, 1, outcome(cli));
      assert.match(cli.stdout, new RegExp(`broken at entry ${following.id} .*deleted`), outcome(cli));
    });

    test('verify needs admin:read', async () => {
      const reader = await tokenFor(server, 'orders:read');
      const res = await call(server.url, 'GET', '/api/admin/audit/verify', { token: reader });
      expectProblem(res, 403, 'insufficient-scope');
    });
  });
}
