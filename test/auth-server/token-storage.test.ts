// Codes and tokens at rest: the authorization server stores authorization codes, refresh tokens and
// opaque access tokens under the SHA-256 of their value, so no row of a leaked database redeems
// anything; rotation, reuse detection, revocation and introspection still find them by the value
// presented; rows stored before (value as id, `jti` in the payload) are rehashed by migration 0004.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { hashedTokenIdsMigration } from '../../src/db/migrations/0004-hashed-token-ids.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin } from '../helpers/http.ts';
import { authorizeWithLogin, exchangeCode, refresh, type TokenResult } from '../helpers/oauth-requests.ts';
import { expectStatus } from '../helpers/expect.ts';

type Client = Awaited<ReturnType<AuthTestServer['createClient']>>;
type User = Awaited<ReturnType<AuthTestServer['createUser']>>;

const sha256 = (value: string): string => createHash('sha256').update(value).digest('base64url');

/** Every cell of every table, as text, with where it came from. */
async function everyCell(server: AuthTestServer): Promise<{ where: string; text: string }[]> {
  const db = server.app.database.db;
  // PostgreSQL: this test's own schema (the introspector lists every schema).
  const schema =
    server.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined;
  const cells: { where: string; text: string }[] = [];
  for (const table of await db.introspection.getTables()) {
    if (schema !== undefined && table.schema !== schema) continue;
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(table.name)}`.execute(db)).rows;
    rows.forEach((row, i) => {
      for (const [column, value] of Object.entries(row))
        if (value !== null)
          cells.push({
            where: `${table.name}[${i}].${column}`,
            text: value instanceof Date ? value.toISOString() : String(value),
          });
    });
  }
  return cells;
}

async function assertNowhereInDatabase(server: AuthTestServer, secrets: Record<string, string>): Promise<void> {
  const cells = await everyCell(server);
  assert.ok(
    cells.some((c) => c.where.startsWith('oidc_payloads[')),
    'the dump reads the stored payloads',
  );
  for (const [name, value] of Object.entries(secrets)) {
    assert.ok(value.length >= 20, `${name} is a real value: ${value}`);
    const found = cells.filter((c) => c.text.includes(value)).map((c) => c.where);
    assert.deepEqual(found, [], `the ${name} is stored as it is`);
  }
}

async function storedRow(server: AuthTestServer, model: string, value: string) {
  return server.app.database.db
    .selectFrom('oidc_payloads')
    .select(['id', 'payload', 'consumed_at', 'grant_id'])
    .where('model', '=', model)
    .where('id', '=', sha256(value))
    .executeTakeFirst();
}

async function form(
  server: AuthTestServer,
  path: string,
  client: Client,
  params: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const response = await fetchWithin(`${server.issuer}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: client.clientId,
      client_secret: client.clientSecret!,
      ...params,
    }).toString(),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    // Not JSON (a 503 from the overload guard): `text` shows it in the assertion messages.
  }
  return { status: response.status, body, text };
}

function tokenOf(result: TokenResult, name: 'refresh_token' | 'access_token'): string {
  expectStatus(result, 200, name);
  const value = result.body[name];
  assert.equal(typeof value, 'string', `${name} in ${result.text}`);
  return value as string;
}

for (const dialect of testDialects()) {
  describe(`codes and tokens at rest [${dialect}]`, () => {
    let server: AuthTestServer;
    let client: Client;
    let user: User;
    before(async () => {
      server = await startAuthServer(dialect);
      client = await server.createClient();
      user = await server.createUser();
    });
    after(() => server.close());

    test('after a code flow and a refresh, no code or token value is anywhere in the database; each is stored under its SHA-256', async () => {
      const flow = await authorizeWithLogin(server, client, user);
      await assertNowhereInDatabase(server, { 'authorization code': flow.code });
      const codeRow = await storedRow(server, 'AuthorizationCode', flow.code);
      assert.ok(codeRow, 'the code is stored under its hash');
      assert.equal(JSON.parse(codeRow.payload).jti, undefined, `the code's payload has no jti: ${codeRow.payload}`);

      const first = tokenOf(await exchangeCode(server, client, flow), 'refresh_token');
      const second = tokenOf(await refresh(server, client, first), 'refresh_token');
      await assertNowhereInDatabase(server, {
        'authorization code': flow.code,
        'first refresh token': first,
        'rotated refresh token': second,
      });
      for (const value of [first, second]) {
        const row = await storedRow(server, 'RefreshToken', value);
        assert.ok(row, 'the refresh token is stored under its hash');
        assert.equal(JSON.parse(row.payload).jti, undefined, `the refresh token's payload has no jti: ${row.payload}`);
      }
      assert.ok(
        (await storedRow(server, 'RefreshToken', first))?.consumed_at,
        'the rotated-out token is marked consumed',
      );
    });

    test('an opaque access token (a sign-in-only client, for userinfo) is stored hashed and still works at userinfo', async () => {
      const signInOnly = await server.createClient({ scopes: [] });
      const tokens = await exchangeCode(server, signInOnly, await authorizeWithLogin(server, signInOnly, user));
      const accessToken = tokenOf(tokens, 'access_token');
      assert.ok(!accessToken.includes('.'), `an opaque token, not a JWT: ${accessToken}`);
      await assertNowhereInDatabase(server, {
        'opaque access token': accessToken,
        'refresh token': tokenOf(tokens, 'refresh_token'),
      });
      assert.ok(await storedRow(server, 'AccessToken', accessToken), 'stored under its hash');
      const userinfo = await fetchWithin(`${server.issuer}/userinfo`, {
        headers: { authorization: `Bearer ${accessToken}` },
      });
      assert.equal(userinfo.status, 200, await userinfo.clone().text());
      assert.equal(((await userinfo.json()) as { sub?: string }).sub, user.id);
    });

    test('on hashed rows, rotation works and reusing a rotated-out refresh token revokes the whole grant', async () => {
      const first = tokenOf(
        await exchangeCode(server, client, await authorizeWithLogin(server, client, user)),
        'refresh_token',
      );
      const grantId = (await storedRow(server, 'RefreshToken', first))?.grant_id;
      assert.ok(grantId, 'the refresh token row (by hash) carries its grant');
      const second = tokenOf(await refresh(server, client, first), 'refresh_token');
      assert.notEqual(second, first);
      const third = tokenOf(await refresh(server, client, second), 'refresh_token');

      const reuse = await refresh(server, client, first);
      assert.equal(reuse.status, 400, reuse.text);
      assert.equal(reuse.body.error, 'invalid_grant');
      const newest = await refresh(server, client, third);
      assert.equal(newest.status, 400, `the family is revoked: ${newest.text}`);
      assert.equal(newest.body.error, 'invalid_grant');
      const left = await server.app.database.db
        .selectFrom('oidc_payloads')
        .select(['model', 'id'])
        .where((eb) =>
          eb.or([eb('grant_id', '=', grantId), eb.and([eb('model', '=', 'Grant'), eb('id', '=', grantId)])]),
        )
        .execute();
      assert.deepEqual(left, [], 'nothing of the grant is left');
    });

    test('introspection and revocation find a refresh token by the value presented', async () => {
      const token = tokenOf(
        await exchangeCode(server, client, await authorizeWithLogin(server, client, user)),
        'refresh_token',
      );
      assert.ok(await storedRow(server, 'RefreshToken', token), 'stored under its hash');
      const active = await form(server, '/introspect', client, { token, token_type_hint: 'refresh_token' });
      assert.equal(active.status, 200, active.text);
      assert.equal(active.body.active, true, active.text);
      assert.equal(active.body.sub, user.id);

      const revoked = await form(server, '/revoke', client, { token, token_type_hint: 'refresh_token' });
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal(await storedRow(server, 'RefreshToken', token), undefined, 'the hashed row is gone');
      assert.equal((await form(server, '/introspect', client, { token })).body.active, false);
      const after = await refresh(server, client, token);
      assert.equal(after.status, 400, after.text);
      assert.equal(after.body.error, 'invalid_grant');
    });

    test('migration 0004 rehashes a refresh token stored the old way (value as id, jti in the payload), which then refreshes', async () => {
      const db = server.app.database.db;
      const token = tokenOf(
        await exchangeCode(server, client, await authorizeWithLogin(server, client, user)),
        'refresh_token',
      );
      const hashed = await storedRow(server, 'RefreshToken', token);
      assert.ok(hashed);
      // Back to the shape every version before this one stored, then the migration once more.
      await db
        .updateTable('oidc_payloads')
        .set({ id: token, payload: JSON.stringify({ ...JSON.parse(hashed.payload), jti: token }) })
        .where('model', '=', 'RefreshToken')
        .where('id', '=', hashed.id)
        .execute();
      // Its `up` alone: later migrations have run on this database, and Kysely keeps them in order.
      await hashedTokenIdsMigration().up(db);

      const rehashed = await storedRow(server, 'RefreshToken', token);
      assert.ok(rehashed, 'stored under its hash again');
      assert.equal(JSON.parse(rehashed.payload).jti, undefined, rehashed.payload);
      await assertNowhereInDatabase(server, { 'refresh token': token });
      const refreshed = await refresh(server, client, token);
      assert.equal(refreshed.status, 200, `the rehashed token still refreshes: ${refreshed.text}`);
    });
  });
}
