// `signet user`, `signet client` and `signet keys` against a real SQLite file, as an operator runs them.
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { startAuthServer } from './helpers/auth-server.ts';
import { createTestDatabase, TEST_WEBHOOK_SECRET_KEY, testDialects, type TestDatabase } from './helpers/databases.ts';
import { COMMAND_TIMEOUT_MS, outcome } from './helpers/deadline.ts';
import { openDatabase } from '../src/db/database.ts';
import { expectStatus } from './helpers/expect.ts';
import { authorizeWithLogin, exchangeCode, jwtParts, tokenFrom } from './helpers/oauth-requests.ts';

const BIN = new URL('../bin/signet.js', import.meta.url).pathname;

function cli(env: () => Record<string, string>) {
  return (args: string[], input?: string) =>
    spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, LOG_LEVEL: 'silent', WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY, ...env() },
      encoding: 'utf8',
      input,
      timeout: COMMAND_TIMEOUT_MS,
    });
}

/**
 * The stdout of a command that must have succeeded, for JSON.parse: a failure shows its stderr here, not
 * as a JSON syntax error.
 */
function succeeded(result: SpawnSyncReturns<string>): string {
  assert.equal(result.status, 0, outcome(result));
  return result.stdout;
}

/** Every key of a `--json` answer, however deeply nested, is snake_case (docs/reference/cli.md). */
function assertSnakeCase(value: unknown, where: string): void {
  if (Array.isArray(value)) for (const item of value) assertSnakeCase(item, where);
  else if (value && typeof value === 'object')
    for (const [key, inner] of Object.entries(value)) {
      assert.match(key, /^[a-z]+(?:_[a-z]+)*$/, `${where}: ${key} is not snake_case in ${JSON.stringify(value)}`);
      assertSnakeCase(inner, where);
    }
}

/** The parsed `--json` output of a command that must succeed, checked for snake_case keys. */
function jsonOf<T>(result: SpawnSyncReturns<string>, where: string): T {
  const value = JSON.parse(succeeded(result)) as T;
  assertSnakeCase(value, where);
  return value;
}

const OIDC_CLIENT = [
  'client',
  'create',
  '--name',
  'Shop front',
  '--type',
  'confidential',
  '--grant',
  'authorization_code,refresh_token',
  '--redirect-uri',
  'http://127.0.0.1:9/callback',
  '--scope',
  'openid profile email orders:read',
  '--json',
];

for (const dialect of testDialects())
  describe(`signet administration commands (${dialect})`, () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase(dialect);
    });
    after(async () => {
      await database?.drop();
    });
    const run = cli(() => ({ DATABASE_URL: database.url }));

    test('user create reads the password from stdin, prints snake_case JSON, and refuses a duplicate e-mail', () => {
      const created = run(
        ['user', 'create', '--email', 'Ann@Example.test', '--name', 'Ann', '--password-stdin', '--json'],
        'correct horse battery\n',
      );
      const user = jsonOf<{ id: string; email: string; name: string; created_at: string }>(created, 'user create');
      assert.deepEqual(
        Object.keys(user),
        ['id', 'email', 'name', 'roles', 'disabled_at', 'created_at'],
        created.stdout,
      );
      assert.match(user.id, /^[0-9a-f-]{36}$/);
      assert.equal(user.email, 'ann@example.test');
      assert.ok(!Number.isNaN(Date.parse(user.created_at)), created.stdout);
      assert.doesNotMatch(created.stdout, /horse|argon2/, 'neither the password nor its hash is printed');
      const duplicate = run(
        ['user', 'create', '--email', 'ann@example.test', '--name', 'Ann', '--password-stdin'],
        'another password\n',
      );
      assert.equal(duplicate.status, 2, outcome(duplicate));
      assert.match(duplicate.stderr, /already exists/);
      const list = jsonOf<{ id: string }[]>(run(['user', 'list', '--json']), 'user list');
      assert.deepEqual(
        list.find((u) => u.id === user.id),
        user,
        'list shows each user as create did',
      );
      const deleted = jsonOf<{ deleted: string }>(run(['user', 'delete', 'ann@example.test', '--json']), 'user delete');
      assert.equal(deleted.deleted, user.id);
      const again = run(['user', 'delete', user.id]);
      assert.equal(again.status, 1, outcome(again));
    });

    test('user create refuses passwords on the command line and short passwords', () => {
      const onCommandLine = run(['user', 'create', '--email', 'b@example.test', '--name', 'B']);
      assert.equal(onCommandLine.status, 2, outcome(onCommandLine));
      const short = run(['user', 'create', '--email', 'b@example.test', '--name', 'B', '--password-stdin'], 'short\n');
      assert.equal(short.status, 2, outcome(short));
      assert.match(short.stderr, /8 to 1024 characters/);
    });

    test('client create prints the secret once; list never shows it; rotate-secret replaces it', () => {
      const created = run([
        'client',
        'create',
        '--name',
        'Billing',
        '--type',
        'confidential',
        '--grant',
        'client_credentials',
        '--scope',
        'orders:read orders:write',
        '--json',
      ]);
      const client = jsonOf<{
        client_id: string;
        client_secret: string;
        scope: string;
        grant_types: string[];
      }>(created, 'client create');
      assert.match(client.client_id, /^cl_[0-9a-f]{32}$/);
      assert.match(client.client_secret, /^scs_[A-Za-z0-9_-]{43}$/);
      assert.equal(client.scope, 'orders:read orders:write');
      assert.deepEqual(client.grant_types, ['client_credentials']);
      const list = run(['client', 'list', '--json']);
      assert.ok(jsonOf<{ client_id: string }[]>(list, 'client list').some((c) => c.client_id === client.client_id));
      assert.ok(!list.stdout.includes(client.client_secret), 'the secret is shown only once');
      const rotated = jsonOf<{ client_secret: string }>(
        run(['client', 'rotate-secret', client.client_id, '--json']),
        'client rotate-secret',
      );
      assert.notEqual(rotated.client_secret, client.client_secret);
      const deleted = jsonOf<{ deleted: string }>(
        run(['client', 'delete', client.client_id, '--json']),
        'client delete',
      );
      assert.equal(deleted.deleted, client.client_id);
      const deletedAgain = run(['client', 'delete', client.client_id]);
      assert.equal(deletedAgain.status, 1, outcome(deletedAgain));
    });

    test('client create refuses unsafe or impossible registrations with a message saying what to change', () => {
      const cases: [string[], RegExp][] = [
        [['--type', 'public', '--grant', 'client_credentials'], /public client cannot use client_credentials/],
        [['--type', 'confidential', '--grant', 'authorization_code'], /needs at least one --redirect-uri/],
        [
          ['--type', 'confidential', '--grant', 'authorization_code', '--redirect-uri', 'http://app.example/cb'],
          /must use https/,
        ],
        [
          ['--type', 'confidential', '--grant', 'authorization_code', '--redirect-uri', 'https://app.example/cb#x'],
          /fragment/,
        ],
        [['--type', 'confidential', '--grant', 'refresh_token'], /refresh_token needs authorization_code/],
        [['--type', 'confidential', '--grant', 'client_credentials', '--scope', 'admin'], /unknown scope admin/],
        [
          ['--type', 'confidential', '--grant', 'client_credentials', '--scope', 'openid orders:read'],
          /--scope openid only applies to clients with the authorization_code grant/,
        ],
        [['--type', 'confidential', '--grant', 'password'], /unknown grant password/],
        [
          ['--type', 'confidential', '--grant', 'client_credentials'],
          /client_credentials needs at least one API --scope/,
        ],
        [
          [
            '--type',
            'public',
            '--grant',
            'authorization_code',
            '--redirect-uri',
            'https://app.example/cb',
            '--cors-origin',
            'https://app.example/path',
          ],
          /not an origin/,
        ],
      ];
      for (const [args, message] of cases) {
        const result = run(['client', 'create', '--name', 'X', ...args]);
        assert.equal(result.status, 2, `${args.join(' ')}: ${outcome(result)}`);
        assert.match(result.stderr, message, args.join(' '));
      }
      const ok = run([
        'client',
        'create',
        '--name',
        'SPA',
        '--type',
        'public',
        '--grant',
        'authorization_code,refresh_token',
        '--redirect-uri',
        'http://localhost:5173/callback',
        '--cors-origin',
        'http://localhost:5173',
        '--json',
      ]);
      assert.equal(ok.status, 0, outcome(ok));
      assert.equal(
        (JSON.parse(ok.stdout) as { client_secret?: string }).client_secret,
        undefined,
        'a public client has no secret',
      );
    });

    test('keys rotate prints the new key ids and when they sign; keys list shows them pending until then', () => {
      // No server has run on this database: the first keys sign at once, the next ones after the delay.
      const first = jsonOf<{ kids: string[]; activates_at: string }>(run(['keys', 'rotate', '--json']), 'keys rotate');
      assert.ok(Date.parse(first.activates_at) <= Date.now(), `nothing to wait for: ${JSON.stringify(first)}`);
      const result = run(['keys', 'rotate', '--json']);
      const rotated = jsonOf<{ kids: string[]; activates_at: string }>(result, 'keys rotate');
      assert.equal(rotated.kids.length, 2, 'RS256 for ID tokens and ES256 for access tokens');
      type Listed = { kid: string; use: string; state: string; activates_at: string; retired_at: string | null };
      const listed = jsonOf<Listed[]>(run(['keys', 'list', '--json']), 'keys list');
      // KEY_ROTATION_DELAY is 60 s by default: the new keys are published, the old ones sign until then.
      for (const kid of rotated.kids) {
        const key = listed.find((k) => k.kid === kid);
        assert.ok(key?.state === 'pending' && key.activates_at === rotated.activates_at, JSON.stringify(listed));
      }
      const replaced = listed.filter((k) => k.use === 'jws' && k.state === 'signing');
      assert.ok(
        replaced.length > 0 && replaced.every((k) => k.retired_at === rotated.activates_at),
        JSON.stringify(listed),
      );
      assert.match(run(['keys', 'list']).stdout, /^pending +jws +ES256 +\S+ +signs from /m);
      const kek = run(['keys', 'generate-kek']);
      assert.match(kek.stdout.trim(), /^[A-Za-z0-9_-]{43}$/, outcome(kek));
    });
    test('client create accepts the OpenID Connect scopes an OIDC user types, and stores them as given', () => {
      const client = jsonOf<Record<string, unknown>>(run(OIDC_CLIENT), 'client create');
      assert.equal(client.scope, 'openid profile email orders:read');
      assert.equal(client.client_name, 'Shop front');
      const listed = jsonOf<Record<string, unknown>[]>(run(['client', 'list', '--json']), 'client list');
      assert.equal(listed.find((c) => c.client_id === client.client_id)?.scope, 'openid profile email orders:read');
    });

    test('client registration-token issues a token once, lists and revokes it; never with an admin scope', async () => {
      const off = run(['client', 'registration-token', '--json']);
      assert.equal(off.status, 2, outcome(off));
      assert.match(off.stderr, /DYNAMIC_REGISTRATION/);
      const runOn = cli(() => ({ DATABASE_URL: database.url, DYNAMIC_REGISTRATION: 'true' }));
      const issued = jsonOf<{
        registration_token: string;
        id: string;
        expires_at: string;
        scope: string;
        max_uses: number;
      }>(
        runOn(['client', 'registration-token', '--expires-in', '2h', '--scope', 'orders:read', '--json']),
        'client registration-token',
      );
      assert.match(issued.registration_token, /^[A-Za-z0-9_-]{43}$/);
      assert.match(issued.id, /^rt_[0-9a-f]{24}$/);
      assert.equal(issued.scope, 'orders:read');
      assert.equal(issued.max_uses, 1, 'one use unless --max-uses says otherwise');
      const lifetime = Date.parse(issued.expires_at) - Date.now();
      assert.ok(lifetime > 3_500_000 && lifetime <= 7_200_000, issued.expires_at);
      const unknown = runOn(['client', 'registration-token', '--scope', 'nonsense']);
      assert.equal(unknown.status, 2, outcome(unknown));
      assert.match(unknown.stderr, /nonsense is not a scope the registration policy allows/);
      for (const scope of ['admin:read', 'admin:write']) {
        const admin = runOn(['client', 'registration-token', '--scope', `orders:read ${scope}`]);
        assert.equal(admin.status, 2, outcome(admin));
        assert.match(admin.stderr, new RegExp(`${scope} is never given to a self-registered client`));
      }
      const badDuration = runOn(['client', 'registration-token', '--expires-in', 'soon']);
      assert.equal(badDuration.status, 2, outcome(badDuration));
      const badUses = runOn(['client', 'registration-token', '--max-uses', '0']);
      assert.equal(badUses.status, 2, outcome(badUses));

      const listed = jsonOf<{ id: string; status: string; use_count: number }[]>(
        runOn(['client', 'registration-token', 'list', '--json']),
        'client registration-token list',
      );
      assert.deepEqual(
        listed.map((t) => [t.id, t.status, t.use_count]),
        [[issued.id, 'active', 0]],
      );
      assert.ok(!JSON.stringify(listed).includes(issued.registration_token), 'the list never shows the token');
      const revoked = jsonOf<{ status: string; revoked_at: string }>(
        runOn(['client', 'registration-token', 'revoke', issued.id, '--json']),
        'client registration-token revoke',
      );
      assert.equal(revoked.status, 'revoked');
      assert.match(runOn(['client', 'registration-token', 'list']).stdout, new RegExp(`${issued.id}\\s+revoked`));
      const missing = runOn(['client', 'registration-token', 'revoke', 'rt_000000000000000000000000']);
      assert.equal(missing.status, 1, outcome(missing));
      const handle = openDatabase(database.url);
      try {
        const entries = await handle.db
          .selectFrom('audit_log')
          .selectAll()
          .where('action', 'in', ['registration_token.issued', 'registration_token.revoked'])
          .orderBy('occurred_at')
          .execute();
        assert.deepEqual(
          entries.map((e) => [e.action, e.actor_type, e.target_id]),
          [
            ['registration_token.issued', 'cli', issued.id],
            ['registration_token.revoked', 'cli', issued.id],
          ],
        );
        assert.ok(!JSON.stringify(entries).includes(issued.registration_token), 'the token is not in the trail');
        const stored = await handle.db.selectFrom('registration_tokens').selectAll().execute();
        assert.ok(!JSON.stringify(stored).includes(issued.registration_token), 'only its hash is stored');
      } finally {
        await handle.db.destroy();
      }
    });

    test('client create, rotate-secret and delete are audited with the CLI user as the actor, without the secret', async () => {
      const created = jsonOf<{ client_id: string; client_secret: string }>(
        run([
          'client',
          'create',
          '--name',
          'Audited',
          '--type',
          'confidential',
          '--grant',
          'client_credentials',
          '--scope',
          'orders:read',
          '--json',
        ]),
        'client create',
      );
      const rotated = jsonOf<{ client_secret: string }>(
        run(['client', 'rotate-secret', created.client_id, '--json']),
        'client rotate-secret',
      );
      succeeded(run(['client', 'delete', created.client_id]));
      const handle = openDatabase(database.url);
      try {
        const entries = await handle.db
          .selectFrom('audit_log')
          .selectAll()
          .where('target_id', '=', created.client_id)
          .orderBy('occurred_at')
          .execute();
        assert.deepEqual(
          entries.map((e) => [e.action, e.actor_type]),
          [
            ['client.created', 'cli'],
            ['client.secret_rotated', 'cli'],
            ['client.deleted', 'cli'],
          ],
        );
        const text = JSON.stringify(entries);
        assert.ok(!text.includes(created.client_secret) && !text.includes(rotated.client_secret), text);
      } finally {
        await handle.db.destroy();
      }
    });
  });

for (const dialect of testDialects())
  describe(`a client created with OIDC scopes signs users in (${dialect})`, () => {
    test('client create --scope "openid profile email orders:read": the code flow gets an ID token with the claims and an API token with orders:read', async () => {
      const server = await startAuthServer(dialect);
      try {
        const run = cli(() => ({ DATABASE_URL: server.databaseUrl }));
        const created = jsonOf<{ client_id: string; client_secret: string }>(run(OIDC_CLIENT), 'client create');
        const client = { clientId: created.client_id, clientSecret: created.client_secret };
        const user = await server.createUser();
        const flow = await authorizeWithLogin(server, client, user, {
          scope: 'openid profile email orders:read',
          redirect_uri: 'http://127.0.0.1:9/callback',
        });
        const tokens = await exchangeCode(server, client, flow);
        expectStatus(tokens, 200, 'code exchange');
        // The token response's scope is the access token's (the API's share of the grant, RFC 6749 §5.1).
        assert.ok(String(tokens.body.scope).split(' ').includes('orders:read'), tokens.text);
        const idToken = jwtParts(tokenFrom(tokens, 'id_token')).payload;
        assert.equal(idToken.sub, user.id);
        assert.equal(idToken.email, user.email);
        assert.equal(idToken.name, user.name);
        const accessToken = jwtParts(tokenFrom(tokens)).payload;
        assert.equal(accessToken.aud, server.resource);
        assert.ok(String(accessToken.scope).split(' ').includes('orders:read'), String(accessToken.scope));
        assert.equal(typeof tokens.body.refresh_token, 'string', tokens.text);
      } finally {
        await server.close();
      }
    });
  });
