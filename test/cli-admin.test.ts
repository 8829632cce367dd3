// `signet user`, `signet client` and `signet keys` against a real SQLite file, as an operator runs them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

const BIN = new URL('../bin/signet.js', import.meta.url).pathname;

function cli(env: Record<string, string>) {
  return (args: string[], input?: string) =>
    spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
      encoding: 'utf8',
      input,
    });
}

describe('signet administration commands', () => {
  const run = cli({ DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), 'signet-admin-')), 'signet.db')}` });

  test('user create reads the password from stdin, prints JSON, and refuses a duplicate e-mail', () => {
    const created = run(
      ['user', 'create', '--email', 'Ann@Example.test', '--name', 'Ann', '--password-stdin', '--json'],
      'correct horse battery\n',
    );
    assert.equal(created.status, 0, created.stderr);
    const user = JSON.parse(created.stdout) as { id: string; email: string; name: string };
    assert.match(user.id, /^[0-9a-f-]{36}$/);
    assert.equal(user.email, 'ann@example.test');
    assert.doesNotMatch(created.stdout, /horse|argon2/, 'neither the password nor its hash is printed');
    const duplicate = run(
      ['user', 'create', '--email', 'ann@example.test', '--name', 'Ann', '--password-stdin'],
      'another password\n',
    );
    assert.equal(duplicate.status, 2);
    assert.match(duplicate.stderr, /already exists/);
    const list = JSON.parse(run(['user', 'list', '--json']).stdout) as { id: string }[];
    assert.ok(list.some((u) => u.id === user.id));
    const deleted = run(['user', 'delete', 'ann@example.test', '--json']);
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.equal(run(['user', 'delete', user.id]).status, 1);
  });

  test('user create refuses passwords on the command line and short passwords', () => {
    assert.equal(run(['user', 'create', '--email', 'b@example.test', '--name', 'B']).status, 2);
    const short = run(['user', 'create', '--email', 'b@example.test', '--name', 'B', '--password-stdin'], 'short\n');
    assert.equal(short.status, 2);
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
    assert.equal(created.status, 0, created.stderr);
    const client = JSON.parse(created.stdout) as {
      client_id: string;
      client_secret: string;
      scope: string;
      grant_types: string[];
    };
    assert.match(client.client_id, /^cl_[0-9a-f]{32}$/);
    assert.match(client.client_secret, /^scs_[A-Za-z0-9_-]{43}$/);
    assert.equal(client.scope, 'orders:read orders:write');
    assert.deepEqual(client.grant_types, ['client_credentials']);
    const list = run(['client', 'list', '--json']);
    assert.ok(list.stdout.includes(client.client_id));
    assert.ok(!list.stdout.includes(client.client_secret), 'the secret is shown only once');
    const rotated = JSON.parse(run(['client', 'rotate-secret', client.client_id, '--json']).stdout) as {
      client_secret: string;
    };
    assert.notEqual(rotated.client_secret, client.client_secret);
    assert.equal(run(['client', 'delete', client.client_id]).status, 0);
    assert.equal(run(['client', 'delete', client.client_id]).status, 1);
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
      [['--type', 'confidential', '--grant', 'password'], /unknown grant password/],
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
      assert.equal(result.status, 2, args.join(' '));
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
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(
      (JSON.parse(ok.stdout) as { client_secret?: string }).client_secret,
      undefined,
      'a public client has no secret',
    );
  });

  test('keys rotate prints the new key ids', () => {
    const result = run(['keys', 'rotate', '--json']);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(
      (JSON.parse(result.stdout) as { kids: string[] }).kids.length,
      2,
      'RS256 for ID tokens and ES256 for access tokens',
    );
    assert.match(run(['keys', 'generate-kek']).stdout.trim(), /^[A-Za-z0-9_-]{43}$/);
  });
});
