// Rotating the signing keys across instances never fails a valid token (docs/operations/scaling-out.md,
// "Rotating signing keys"): a new key is published everywhere before any instance signs with it, and an
// instance meeting a token of our issuer signed with a key it does not hold rereads its keys once (rate
// limited) before refusing it. Three apps over one database (PostgreSQL: the rotation's NOTIFY; SQLite: no
// notification, only the poll and the unknown-key reload), each signing tokens that the others verify, and
// sign-ins whose requests go to each instance in turn (the authorization server's cookies).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, calculateJwkThumbprint } from 'jose';
import { toDbTime } from '../../src/db/codecs.ts';
import { freePort, startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { createMigratedTestDatabase } from '../helpers/database-template.ts';
import { testDialects, type TestDatabase } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call } from '../helpers/http.ts';
import { authorizeWithLogin, exchangeCode, jwtParts, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';
import { dropWithin } from '../helpers/server.ts';

interface Client {
  clientId: string;
  clientSecret: string | undefined;
}

/** Three instances of one service: one database, one public URL (so one issuer and one API audience). */
async function startCluster(dialect: 'sqlite' | 'postgres', env: Record<string, string>) {
  const database = await createMigratedTestDatabase(dialect);
  const ports = [await freePort(), await freePort(), await freePort()];
  const shared = { PUBLIC_URL: `http://127.0.0.1:${ports[0]}`, ...env };
  const servers: AuthTestServer[] = [];
  try {
    for (const port of ports) servers.push(await startAuthServer(dialect, shared, { databaseUrl: database.url, port }));
  } catch (err) {
    await stopCluster(servers, database);
    throw err;
  }
  return { servers, database };
}

async function stopCluster(servers: AuthTestServer[], database: TestDatabase): Promise<void> {
  for (const server of servers) await server.stop();
  await dropWithin(database);
}

async function clientToken(server: AuthTestServer, client: Client, scope: string): Promise<string> {
  const issued = await tokenRequest(server, {
    grant_type: 'client_credentials',
    scope,
    client_id: client.clientId,
    client_secret: client.clientSecret!,
  });
  return tokenFrom(issued, 'access_token', `client credentials at ${server.url}`);
}

const kidOf = (token: string): string => String(jwtParts(token).header.kid);

for (const dialect of testDialects()) {
  describe(`signing key rotation across three instances [${dialect}]`, () => {
    let servers: AuthTestServer[];
    let database: TestDatabase;
    let caller: Client;
    let admin: Client;
    let app: Client;
    let user: { email: string; password: string };

    before(async () => {
      // PostgreSQL: the rotation's NOTIFY alone publishes the new keys in time (the poll is the default 30 s).
      // SQLite: nothing notifies, so the poll must run within the delay (docs/operations/scaling-out.md).
      const env: Record<string, string> =
        dialect === 'postgres' ? { KEY_ROTATION_DELAY: '2s' } : { KEY_ROTATION_DELAY: '4s', KEY_RELOAD_INTERVAL: '1s' };
      ({ servers, database } = await startCluster(dialect, env));
      caller = await servers[0]!.createClient({ grantTypes: ['client_credentials'], scopes: ['orders:read'] });
      app = await servers[0]!.createClient({ scopes: ['openid', 'orders:read'] });
      user = await servers[0]!.createUser();
      admin = await servers[0]!.createClient({
        grantTypes: ['client_credentials'],
        scopes: ['admin:read', 'admin:write'],
      });
    });
    after(() => stopCluster(servers, database));

    test('tokens signed by each instance are accepted by the others, continuously across a rotation: 0 × 401', async (t) => {
      const refused: string[] = [];
      const signedBy = servers.map(() => new Set<string>());
      let calls = 0;
      let stop = false;
      let rounds = 0;
      // Each round: every instance signs a fresh token, and both other instances verify it on a protected route.
      const loop = (async () => {
        while (!stop) {
          for (const [i, issuer] of servers.entries()) {
            const token = await clientToken(issuer, caller, 'orders:read');
            signedBy[i]!.add(kidOf(token));
            for (const verifier of servers.filter((s) => s !== issuer)) {
              const answer = await call(verifier.url, 'GET', '/api/orders', { token });
              calls += 1;
              if (answer.status !== 200)
                refused.push(
                  `token of instance ${i} (kid ${kidOf(token)}) at ${verifier.url}: ${answer.status} ${answer.headers.get('www-authenticate')} ${answer.text}`,
                );
            }
          }
          rounds += 1;
        }
      })();
      // Sign-ins whose every request goes to the next instance: the authorization server's cookies, signed
      // by one instance (with its cookie key), are read by another; the code is exchanged at a third.
      let flows = 0;
      const signIns = (async () => {
        while (!stop) {
          const origins = servers.map((s) => s.url);
          try {
            const flow = await authorizeWithLogin(
              servers[0]!,
              app,
              user,
              { scope: 'openid orders:read' },
              { spread: origins },
            );
            const exchangedAt = servers[(flows + 1) % servers.length]!;
            const token = tokenFrom(await exchangeCode(exchangedAt, app, flow), 'access_token', 'code exchange');
            const verifier = servers[(flows + 2) % servers.length]!;
            const answer = await call(verifier.url, 'GET', '/api/orders', { token });
            if (answer.status !== 200)
              refused.push(
                `signed-in user's token (kid ${kidOf(token)}) at ${verifier.url}: ${answer.status} ${answer.text}`,
              );
          } catch (err) {
            refused.push(`sign-in ${flows} across the instances: ${String(err)}`.slice(0, 3000));
          }
          flows += 1;
        }
      })();
      try {
        await waitUntil(
          () => rounds >= 2 || refused.length > 0,
          30_000,
          () => `two rounds before the rotation`,
        );
        const adminToken = await clientToken(servers[1]!, admin, 'admin:read admin:write');
        const rotated = await call(servers[1]!.url, 'POST', '/api/admin/keys/rotate', { token: adminToken });
        assert.equal(rotated.status, 200, rotated.text);
        const kids = rotated.json.Kids as string[];
        // Until every instance has signed with a new key, and two rounds more.
        await waitUntil(
          () => signedBy.every((used) => kids.some((kid) => used.has(kid))) || refused.length > 0,
          60_000,
          () =>
            `every instance signs with one of ${kids.join(', ')}; kids used: ${signedBy.map((s) => [...s].join(' ')).join(' | ')}`,
        );
        const after = rounds;
        await waitUntil(
          () => rounds >= after + 2 || refused.length > 0,
          30_000,
          () => 'two rounds after',
        );
        const flowsSoFar = flows;
        await waitUntil(
          () => flows >= flowsSoFar + 1 || refused.length > 0,
          30_000,
          () => 'one more sign-in',
        );
      } finally {
        stop = true;
        await Promise.all([loop, signIns]);
      }
      assert.deepEqual(refused, [], `${refused.length} of ${calls} calls and ${flows} sign-ins refused`);
      assert.ok(calls >= 6 * 5, `calls made: ${calls}`);
      t.diagnostic(
        `${calls} calls in ${rounds} rounds and ${flows} sign-ins across instances, ${refused.length} refused`,
      );
    });
  });

  describe(`a token signed with a key this instance has not loaded yet [${dialect}]`, () => {
    let servers: AuthTestServer[];
    let database: TestDatabase;
    let caller: Client;

    before(async () => {
      // No poll during the test: the reads counted below are the unknown-key reloads alone.
      ({ servers, database } = await startCluster(dialect, { KEY_RELOAD_INTERVAL: '10m' }));
      caller = await servers[0]!.createClient({ grantTypes: ['client_credentials'], scopes: ['orders:read'] });
    });
    after(() => stopCluster(servers, database));

    test('rereads the keys once, shared and rate limited, then verifies it; a forged kid costs no more reads', async () => {
      const [signer, verifier, third] = servers as [AuthTestServer, AuthTestServer, AuthTestServer];
      // A key stored without any notification (as a lost NOTIFY, or SQLite, would leave it), loaded by the signer only.
      const { privateKey } = await generateKeyPair('ES256', { extractable: true });
      const jwk = await exportJWK(privateKey);
      const kid = await calculateJwkThumbprint(jwk);
      await signer.app.database.db
        .insertInto('signing_keys')
        .values({
          kid,
          use: 'jws',
          alg: 'ES256',
          material: JSON.stringify({ ...jwk, kid, alg: 'ES256', use: 'sig' }),
          created_at: toDbTime(new Date()),
          activates_at: null,
          retired_at: null,
        })
        .execute();
      assert.equal(await signer.app.authServer!.reloadIfChanged(), true, 'the signer loads the new key');
      const token = await clientToken(signer, caller, 'orders:read');
      assert.equal(kidOf(token), kid, 'signed with the new key');

      const holder = verifier.app.authServer!;
      let reads = 0;
      holder.observeReloads(() => (reads += 1));
      const frozen = Date.now();
      holder.now = () => frozen; // the cooldown does not pass during this test
      const verified = await call(verifier.url, 'GET', '/api/orders', { token });
      assert.equal(verified.status, 200, `${verified.headers.get('www-authenticate')} ${verified.text}`);
      assert.ok(reads >= 1, 'a reread of the keys');
      // On PostgreSQL the notification listener rereads the keys when it (re)connects, which on a busy machine can
      // land in this window: one read more than the unknown keys cause is tolerated, never one per request.
      const base = reads;

      // A kid nobody stored, claiming our issuer: refused, without another read within the cooldown.
      const forger = await generateKeyPair('ES256');
      const forged = await new SignJWT({ client_id: caller.clientId, scope: 'orders:read' })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'not-a-key-of-ours' })
        .setIssuer(jwtParts(token).payload.iss as string)
        .setAudience(jwtParts(token).payload.aud as string)
        .setSubject(caller.clientId)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(forger.privateKey);
      for (let i = 0; i < 3; i++) {
        const refused = await call(verifier.url, 'GET', '/api/orders', { token: forged });
        assert.equal(refused.status, 401, refused.text);
      }
      assert.ok(reads - base <= 1, `no reread per forged request within the cooldown: ${reads - base} for 3`);
      const beforeCooldownEnd = reads;
      holder.now = () => frozen + 60_000;
      assert.equal((await call(verifier.url, 'GET', '/api/orders', { token: forged })).status, 401);
      assert.ok(reads > beforeCooldownEnd, 'a reread once the cooldown has passed');

      // Concurrent requests at an instance that does not hold the key share the reread.
      let thirdReads = 0;
      third.app.authServer!.observeReloads(() => (thirdReads += 1));
      const tokens = await Promise.all([1, 2, 3, 4, 5].map(() => clientToken(signer, caller, 'orders:read')));
      const answers = await Promise.all(tokens.map((t) => call(third.url, 'GET', '/api/orders', { token: t })));
      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 200, 200, 200, 200],
        answers.map((a) => a.text).join('\n'),
      );
      assert.ok(thirdReads >= 1 && thirdReads <= 3, `rereads shared by five requests: ${thirdReads}`);
    });
  });
}
