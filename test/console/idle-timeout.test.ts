// Console sessions end when unused for CONSOLE_IDLE_TIMEOUT_SECONDS (docs/security.md, "Console sessions"),
// besides their absolute lifetime. The store is driven by an injected clock; over HTTP, the stored times
// are moved back instead of waiting (the console session's last use, and the Signet session's sign-in,
// as the clock would have moved them). Real SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { deleteExpiredSessions } from '../../src/console/sessions.repository.ts';
import { createSessionStore, hashId } from '../../src/console/sessions.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { createAdmin, type TestUser } from '../helpers/console.ts';
import { consoleSignIn } from '../helpers/console-http.ts';
import { testDialects } from '../helpers/databases.ts';
import { fetchWithin } from '../helpers/http.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';
import type { CookieJar } from '../helpers/oauth-flow.ts';

const MINUTE = 60_000;
const USER = { userId: 'a-user', name: 'Ada', email: 'ada@example.test' };

function tokenSet(now: Date) {
  return {
    accessToken: 'a',
    refreshToken: 'r',
    idToken: 'i',
    scope: 'openid',
    expiresAt: new Date(now.getTime() + 5 * MINUTE),
  };
}

for (const dialect of testDialects()) {
  describe(`console session idle timeout, injected clock [${dialect}]`, () => {
    let handle: DatabaseHandle;
    useMigratedDatabase(dialect, (h) => (handle = h));
    const store = () =>
      createSessionStore({ db: handle.db, key: randomBytes(32), lifetimeSeconds: 86_400, idleTimeoutSeconds: 1800 });

    test('each use restarts the 30 minutes; 30 unused minutes end the session for good', async () => {
      const sessions = store();
      const t0 = new Date('2026-11-28T10:00:00Z');
      const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE);
      const id = await sessions.create(USER, tokenSet(t0), t0);
      assert.ok(await sessions.find(id, at(29)), 'used after 29 minutes');
      assert.ok(await sessions.find(id, at(58)), '29 minutes after that use');
      assert.equal(await sessions.find(id, at(88)), undefined, '30 minutes unused');
      assert.equal(await sessions.find(id, at(59)), undefined, 'gone, not only hidden');
    });

    test('within the absolute lifetime only: a session in use still ends at its expiry', async () => {
      const sessions = createSessionStore({
        db: handle.db,
        key: randomBytes(32),
        lifetimeSeconds: 3600,
        idleTimeoutSeconds: 1800,
      });
      const t0 = new Date('2026-11-28T12:00:00Z');
      const id = await sessions.create(USER, tokenSet(t0), t0);
      for (const minutes of [20, 40, 59]) assert.ok(await sessions.find(id, new Date(t0.getTime() + minutes * MINUTE)));
      assert.equal(await sessions.find(id, new Date(t0.getTime() + 60 * MINUTE)), undefined);
    });

    test('the purge removes idle sessions with the expired ones', async () => {
      const sessions = store();
      const t0 = new Date('2026-11-28T14:00:00Z');
      const idle = await sessions.create(USER, tokenSet(t0), t0);
      const used = await sessions.create(USER, tokenSet(t0), new Date(t0.getTime() + 20 * MINUTE));
      const now = new Date(t0.getTime() + 35 * MINUTE);
      await deleteExpiredSessions(handle.db, now, new Date(now.getTime() - 30 * MINUTE));
      const left = await handle.db.selectFrom('console_sessions').select('id_hash').execute();
      const hashes = left.map((row) => row.id_hash);
      assert.ok(!hashes.includes(hashId(idle)), 'the idle one is purged');
      assert.ok(hashes.includes(hashId(used)), 'the used one stays');
    });
  });

  describe(`console session idle timeout over HTTP [${dialect}]`, () => {
    let server: AuthTestServer;
    let admin: TestUser;
    before(async () => {
      server = await startAuthServer(dialect, { CONSOLE_IDLE_TIMEOUT_SECONDS: '600' });
      admin = await createAdmin(server);
    });
    after(() => server.close());

    /** As if `ms` had passed since the last use of the console session and the sign-in at Signet. */
    async function age(ms: number): Promise<void> {
      const db = server.app.database.db;
      await db
        .updateTable('console_sessions')
        .set({ last_seen_at: toDbTime(new Date(Date.now() - ms)) })
        .where('user_id', '=', admin.id)
        .execute();
      const sessions = await db
        .selectFrom('oidc_payloads')
        .select(['id', 'payload'])
        .where('model', '=', 'Session')
        .where('account_id', '=', admin.id)
        .execute();
      for (const row of sessions) {
        const payload = JSON.parse(row.payload) as { loginTs: number };
        payload.loginTs -= Math.ceil(ms / 1000);
        await db
          .updateTable('oidc_payloads')
          .set({ payload: JSON.stringify(payload) })
          .where('id', '=', row.id)
          .execute();
      }
    }

    async function signedIn(jar: CookieJar): Promise<boolean> {
      const answer = await fetchWithin(`${server.url}/console/session`, { headers: { cookie: jar.header() } });
      return ((await answer.json()) as { signed_in: boolean }).signed_in;
    }

    test('unused for less than the timeout: still signed in; for longer: signed out, and sign-in asks for the password', async () => {
      const { jar, status } = await consoleSignIn(server, admin);
      assert.equal(status, 303);
      assert.equal(await signedIn(jar), true);
      await age(9 * MINUTE);
      assert.equal(await signedIn(jar), true, '9 of 10 minutes unused');
      await age(11 * MINUTE);
      assert.equal(await signedIn(jar), false, '11 of 10 minutes unused');
      // The Signet session behind it is still there, but its password entry is older than the timeout
      // (max_age): /console/login leads to the login form, not straight back into the console.
      const login = await fetchWithin(`${server.url}/console/login`, {
        redirect: 'manual',
        headers: { cookie: jar.header() },
      });
      jar.store(login);
      const authorize = new URL(login.headers.get('location')!, server.url);
      assert.equal(authorize.searchParams.get('max_age'), '600', authorize.href);
      let next = authorize.href;
      let html = '';
      for (let step = 0; step < 5 && !html; step++) {
        const answer = await fetchWithin(next, { redirect: 'manual', headers: { cookie: jar.header() } });
        jar.store(answer);
        const location = answer.headers.get('location');
        if (location) next = new URL(location, next).href;
        else html = await answer.text();
        assert.ok(!next.includes('/console/callback'), `signed straight back in: ${next}`);
      }
      assert.match(html, /name="password"/, 'Signet asks for the password');
    });
  });
}
