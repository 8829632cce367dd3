// The audit trail of a realistic session (docs/security.md, "The audit trail"): sign-in failures and success,
// consent, refresh and refresh-token reuse, revocation, client and webhook secrets, read back through
// GET /api/admin/audit and `signet audit --json`; then the whole table is searched for every secret the
// session handled (passwords, client secrets, tokens, codes, webhook secrets) and for token shapes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { TEST_WEBHOOK_SECRET_KEY, testDialects } from '../helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome, waitUntil } from '../helpers/deadline.ts';
import { call, fetchWithin } from '../helpers/http.ts';
import { FlowError } from '../helpers/oauth-flow.ts';
import { authorizeWithLogin, exchangeCode, refresh, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const WAIT_MS = 10_000;

interface Item {
  Id: string;
  OccurredAtUtc: string;
  Actor: { Type: string; Id: string };
  Action: string;
  Target: { Type: string; Id: string } | null;
  Outcome: string;
  RequestId: string | null;
  SourceAddress: string | null;
  Details: Record<string, unknown>;
}

type Client = { clientId: string; clientSecret: string | undefined };

for (const dialect of testDialects()) {
  describe(`the audit trail of a session [${dialect}]`, () => {
    let server: AuthTestServer;
    /** Every secret value the session handled: none may appear in the trail. */
    const secrets = new Map<string, string>();
    const keep = (what: string, value: unknown): string => {
      assert.equal(typeof value, 'string', `${what} is a string`);
      assert.ok((value as string).length >= 8, `${what} is long enough to search for`);
      secrets.set(what, value as string);
      return value as string;
    };
    let adminToken: string;
    let user: { id: string; email: string; password: string };
    let app: Client;
    const state = { grantOfReuse: '', revokeRequestId: '' };

    const cli = (args: string[]) =>
      spawnSync(process.execPath, [BIN, ...args], {
        env: {
          ...process.env,
          LOG_LEVEL: 'silent',
          WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
          DATABASE_URL: server.databaseUrl,
        },
        encoding: 'utf8',
        timeout: COMMAND_TIMEOUT_MS,
      });
    const cliJson = (args: string[]): unknown => {
      const result = cli(args);
      assert.equal(result.status, 0, outcome(result));
      return JSON.parse(result.stdout);
    };

    async function clientToken(client: Client, scope: string): Promise<string> {
      const result = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope },
        {
          basic: [client.clientId, client.clientSecret!],
        },
      );
      return keep(`access token (${scope})`, tokenFrom(result, 'access_token', `client credentials for ${scope}`));
    }

    /** The entries GET /api/admin/audit answers for `query` (one page of 200). */
    async function audit(query: string): Promise<Item[]> {
      const page = await call(server.url, 'GET', `/api/admin/audit?limit=200&${query}`, { token: adminToken });
      assert.equal(page.status, 200, page.text);
      return page.json.Items as Item[];
    }

    /** Polls until `query` finds an entry `match` accepts: provider events are written after the response. */
    async function entryFor(query: string, match: (item: Item) => boolean = () => true): Promise<Item> {
      let found: Item | undefined;
      let last: Item[] = [];
      await waitUntil(
        async () => {
          last = await audit(query);
          found = last.find(match);
          return found !== undefined;
        },
        WAIT_MS,
        () => `an audit entry for ${query}; found ${JSON.stringify(last)}`,
      );
      return found!;
    }

    function signIn(client: Client, email: string, password: string) {
      return authorizeWithLogin(server, client, { email, password }, { scope: 'openid orders:read' });
    }

    before(async () => {
      server = await startAuthServer(dialect, { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOWED_NETWORKS: 'loopback' });
      first = server;
      const created = await server.createUser({ password: 'tr0ub4dor&3 audit horse' });
      user = { id: created.id, email: created.email, password: keep('password', created.password) };
      app = await server.createClient();
      keep('client secret', app.clientSecret);
      const admin = await server.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['admin:read'],
      });
      keep('admin client secret', admin.clientSecret);
      adminToken = await clientToken(admin, 'admin:read');
    });
    let first: AuthTestServer | undefined;
    after(async () => {
      await server?.close();
      // The restarted server (last test) runs on the first one's database, which the first one drops.
      if (first && first !== server) await first.close();
    });

    test('a wrong password: signin.failed by the attempted account, with the request id and address', async () => {
      await assert.rejects(signIn(app, user.email, keep('wrong password', 'not my password at all')), FlowError);
      const entry = await entryFor(`action=signin.failed&actor=${user.id}`);
      assert.deepEqual(entry.Actor, { Type: 'user', Id: user.id });
      assert.deepEqual(entry.Target, { Type: 'user', Id: user.id });
      assert.equal(entry.Outcome, 'failure');
      assert.deepEqual(entry.Details, { client_id: app.clientId, reason: 'wrong_password' });
      assert.equal(entry.SourceAddress, '127.0.0.1');
      assert.match(entry.RequestId ?? '', /^[0-9a-f-]{36}$/);
    });

    test('an unknown account: signin.failed by user "unknown", and nothing typed is kept', async () => {
      // The user typed their password into the e-mail field: it must not land in the trail.
      await assert.rejects(signIn(app, user.password, 'whatever was typed here'), FlowError);
      const entry = await entryFor('action=signin.failed&actor=unknown');
      assert.deepEqual(entry.Actor, { Type: 'user', Id: 'unknown' });
      assert.equal(entry.Target, null);
      assert.deepEqual(entry.Details, { client_id: app.clientId, reason: 'unknown_account' });
    });

    test('a sign-in, its consent, a refresh and a reuse: signin.succeeded, consent.granted, reuse and revocation', async () => {
      const flow = await signIn(app, user.email, user.password);
      keep('authorization code', flow.code);
      const tokens = await exchangeCode(server, app, flow);
      keep('access token', tokenFrom(tokens));
      keep('id token', tokenFrom(tokens, 'id_token'));
      const first = keep('refresh token', tokenFrom(tokens, 'refresh_token'));
      const refreshed = await refresh(server, app, first);
      keep('refreshed access token', tokenFrom(refreshed));
      keep('refreshed id token', tokenFrom(refreshed, 'id_token'));
      keep('rotated refresh token', tokenFrom(refreshed, 'refresh_token'));
      const reused = await refresh(server, app, first);
      assert.equal(reused.status, 400, reused.text);
      assert.equal(reused.body.error, 'invalid_grant', reused.text);

      const signedIn = await entryFor(`action=signin.succeeded&actor=${user.id}`);
      assert.deepEqual(signedIn.Target, { Type: 'user', Id: user.id });
      assert.equal(signedIn.Outcome, 'success');
      assert.deepEqual(signedIn.Details, { client_id: app.clientId });
      const consent = await entryFor(`action=consent.granted&actor=${user.id}`);
      assert.equal(consent.Target?.Type, 'grant');
      assert.equal(consent.Details.client_id, app.clientId);
      assert.equal(consent.Details.automatic, false);
      assert.ok((consent.Details.scopes as string[]).includes('orders:read'), JSON.stringify(consent));
      const grantId = consent.Target!.Id;

      const reuse = await entryFor('action=refresh_token.reuse_detected');
      assert.deepEqual(reuse.Actor, { Type: 'client', Id: app.clientId });
      assert.deepEqual(reuse.Target, { Type: 'grant', Id: grantId });
      assert.equal(reuse.Outcome, 'failure');
      assert.equal(reuse.SourceAddress, '127.0.0.1');
      assert.equal(reuse.RequestId, reused.headers.get('x-request-id'));
      const revoked = await entryFor(`action=grant.revoked&target=${grantId}`);
      assert.deepEqual(revoked.Actor, { Type: 'system', Id: 'signet' });
      assert.deepEqual(revoked.Details, {
        reason: 'refresh_token_reuse',
        client_id: app.clientId,
        account_id: user.id,
      });
      state.grantOfReuse = grantId;
    });

    test('RFC 7009 revocation of a refresh token: grant.revoked by the client', async () => {
      const flow = await signIn(app, user.email, user.password);
      keep('second authorization code', flow.code);
      const tokens = await exchangeCode(server, app, flow);
      keep('second access token', tokenFrom(tokens));
      keep('second id token', tokenFrom(tokens, 'id_token'));
      const refreshToken = keep('second refresh token', tokenFrom(tokens, 'refresh_token'));
      const response = await fetchWithin(`${server.issuer}/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          token: refreshToken,
          client_id: app.clientId,
          client_secret: app.clientSecret!,
        }).toString(),
      });
      assert.equal(response.status, 200, await response.text());
      state.revokeRequestId = response.headers.get('x-request-id') ?? '';
      const revoked = await entryFor(
        `action=grant.revoked&actor=${app.clientId}`,
        (item) => item.Details.reason === 'revoked',
      );
      assert.equal(revoked.Target?.Type, 'grant');
      assert.notEqual(revoked.Target?.Id, state.grantOfReuse);
      assert.equal(revoked.Details.account_id, user.id);
      assert.equal(revoked.RequestId, state.revokeRequestId);
      assert.equal(revoked.SourceAddress, '127.0.0.1');
      const refused = await refresh(server, app, refreshToken);
      assert.equal(refused.status, 400, refused.text);
    });

    test('client and webhook secrets handled through the CLI and the API', async () => {
      const created = cliJson([
        'client',
        'create',
        '--name',
        'Audited',
        '--type',
        'confidential',
        '--grant',
        'client_credentials',
        '--scope',
        'webhooks:manage',
        '--json',
      ]) as { client_id: string; client_secret: string };
      keep('CLI client secret', created.client_secret);
      const rotated = cliJson(['client', 'rotate-secret', created.client_id, '--json']) as { client_secret: string };
      keep('rotated CLI client secret', rotated.client_secret);
      const token = await clientToken(
        { clientId: created.client_id, clientSecret: rotated.client_secret },
        'webhooks:manage',
      );
      const endpoint = await call(server.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: 'http://127.0.0.1:9/hook', Events: ['*'] },
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      keep('webhook secret', endpoint.json.Secret);
      const rotation = await call(server.url, 'POST', `/api/webhooks/${endpoint.json.Id}/rotate-secret`, { token });
      assert.equal(rotation.status, 200, rotation.text);
      keep('rotated webhook secret', rotation.json.Secret);
    });

    test('signet audit --json prints the same entries, newest first, in snake_case', () => {
      const failures = cliJson(['audit', '--action', 'signin.failed', '--json']) as Record<string, unknown>[];
      assert.equal(failures.length, 2, JSON.stringify(failures));
      assert.deepEqual(
        failures.map((f) => f.actor_id),
        ['unknown', user.id],
        'newest first',
      );
      for (const entry of failures) {
        assert.deepEqual(Object.keys(entry).sort(), [
          'action',
          'actor_id',
          'actor_type',
          'details',
          'id',
          'occurred_at',
          'outcome',
          'request_id',
          'source_address',
          'target_id',
          'target_type',
        ]);
        for (const key of Object.keys(entry.details as object)) assert.match(key, /^[a-z]+(?:_[a-z]+)*$/);
      }
      const [latest] = cliJson(['audit', '--actor', user.id, '--limit', '1', '--json']) as Record<string, unknown>[];
      assert.equal(latest?.actor_id, user.id);
      const since = cliJson(['audit', '--since', '2999-01-01T00:00:00Z', '--json']);
      assert.deepEqual(since, []);
      const text = cli(['audit', '--action', 'grant.revoked']);
      assert.equal(text.status, 0, outcome(text));
      assert.match(text.stdout, /grant\.revoked grant:\S+ by client:cl_\w+ from 127\.0\.0\.1 \(success\)/);
      const refused = cli(['audit', '--since', 'yesterday']);
      assert.equal(refused.status, 2, outcome(refused));
    });

    test('no column of any entry holds a password, secret, token or code', async () => {
      const rows = await server.app.database.db.selectFrom('audit_log').selectAll().execute();
      const actions = new Set(rows.map((r) => r.action));
      for (const action of [
        'signin.failed',
        'signin.succeeded',
        'consent.granted',
        'refresh_token.reuse_detected',
        'grant.revoked',
      ])
        assert.ok(actions.has(action), `the session recorded ${action}: ${[...actions].join(', ')}`);
      assert.ok(secrets.size >= 20, `secrets collected: ${[...secrets.keys()].join(', ')}`);
      for (const row of rows) {
        const text = JSON.stringify(Object.values(row));
        for (const [what, value] of secrets)
          assert.ok(!text.includes(value), `the ${what} appears in audit entry ${JSON.stringify(row)}`);
        assert.doesNotMatch(text, /eyJ[\w-]*\.[\w-]+\.[\w-]*/, 'a JWT');
        assert.doesNotMatch(text, /whsec_|scs_/, 'a webhook or client secret');
      }
    });

    test('on start, the retention purge removes entries older than AUDIT_RETENTION and keeps the rest', async () => {
      const db = server.app.database.db;
      const before = await db.selectFrom('audit_log').select('id').execute();
      const old = new Date(Date.now() - 2 * 86_400_000).toISOString();
      await db.updateTable('audit_log').set({ occurred_at: old }).where('action', '=', 'signin.failed').execute();
      const port = Number(new URL(server.url).port);
      await server.stop();
      server = await startAuthServer(dialect, { AUDIT_RETENTION: '1d' }, { databaseUrl: server.databaseUrl, port });
      const left = async () =>
        (await server.app.database.db.selectFrom('audit_log').select('action').execute()).map((r) => r.action);
      await waitUntil(
        async () => !(await left()).includes('signin.failed'),
        WAIT_MS,
        () => 'the old entries purged',
      );
      assert.equal((await left()).length, before.length - 2, 'only the two old entries went');
    });
  });
}
