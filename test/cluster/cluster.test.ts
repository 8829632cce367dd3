// The scale-out recipe of docs/operations/scaling-out.md, proven: two `signet serve` instances on one PostgreSQL
// behind HAProxy running deploy/haproxy/signet.cfg, and a `signet dispatcher`, under a bounded mixed load from
// clients that follow the documented retry rules (test/helpers/retrying-client.ts). Meanwhile every instance is
// rolled (SIGTERM, then started again), the signing keys are rotated, and one instance is killed with SIGKILL and
// started again. Then: no request failed after its retries, no valid token was refused, every acknowledged order
// is in the database exactly once, and every event of those orders reached the receiver, signed.
// Runs with PostgreSQL and an haproxy binary; TEST_HAPROXY_REQUIRED=1 (CI) turns a missing haproxy into a failure.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createClient } from '../../src/auth-server/clients/clients.repository.ts';
import { databaseOptions, openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { loadConfig } from '../../src/config/config.ts';
import { freePort } from '../helpers/auth-server.ts';
import { startChildServer, type ChildServer } from '../helpers/child-server.ts';
import { startDaemon, type RunningDaemon } from '../helpers/daemon.ts';
import { createMigratedTestDatabase } from '../helpers/database-template.ts';
import { TEST_WEBHOOK_SECRET_KEY, type TestDatabase } from '../helpers/databases.ts';
import { waitUntil, withDeadline } from '../helpers/deadline.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { newRetryStats, retryingCall, type RetryStats } from '../helpers/retrying-client.ts';
import { startReceiver, type TestReceiver } from '../helpers/webhook-receiver.ts';

const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find(
  (path) => spawnSync(path, ['-v'], { stdio: 'ignore' }).status === 0,
);
const SIGNET_CFG = new URL('../../deploy/haproxy/signet.cfg', import.meta.url);
const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
/** Enough load to meet every fault mid-request, bounded so the delivery of its events stays within the test's minutes. */
const WORKERS = 2;
const ROUNDS = Number(process.env.CLUSTER_TEST_ROUNDS ?? 1);
const KEK = Buffer.alloc(32, 9).toString('base64url');
const SCOPES = 'orders:read orders:write webhooks:manage';

/** deploy/haproxy/signet.cfg with its bind line and server lines pointed at this test's ports. */
function haproxyConfig(frontendPort: number, instancePorts: number[]): string {
  const shipped = readFileSync(SIGNET_CFG, 'utf8');
  assert.match(shipped, /^ {4}bind 127\.0\.0\.1:8080$/m, 'the bind line the test replaces');
  assert.match(shipped, /^ {4}server signet1 .*$/m, 'the server lines the test replaces');
  const servers = instancePorts.map((port, i) => `    server signet${i + 1} 127.0.0.1:${port} check`).join('\n');
  return shipped
    .replace(/^ {4}bind 127\.0\.0\.1:8080$/m, `    bind 127.0.0.1:${frontendPort}`)
    .replace(/^ {4}server signet1 .*\n {4}server signet2 .*$/m, servers);
}

interface Tally {
  requests: number;
  failures: string[];
  unauthorized: string[];
  /** Order id by the Idempotency-Key of its create, for every create acknowledged (201). */
  created: Map<string, number>;
  paid: Set<number>;
  kids: Set<string>;
}

if (!HAPROXY && process.env.TEST_HAPROXY_REQUIRED === '1') {
  test('haproxy is installed (TEST_HAPROXY_REQUIRED=1)', () => {
    assert.fail('TEST_HAPROXY_REQUIRED=1 but no haproxy at /usr/sbin/haproxy; apt-get install haproxy');
  });
} else if (HAPROXY && process.env.TEST_POSTGRES_URL) {
  describe('a cluster behind HAProxy under rolling restarts, a key rotation and a kill -9', () => {
    let database: TestDatabase;
    let handle: DatabaseHandle;
    let receiver: TestReceiver;
    let haproxy: RunningDaemon | undefined;
    let dispatcher: ChildProcess | undefined;
    const instances: (ChildServer | undefined)[] = [];
    let publicUrl: string;
    let instancePorts: number[];
    let env: Record<string, string>;
    let client: { id: string; secret: string };

    before(async () => {
      database = await createMigratedTestDatabase('postgres');
      receiver = await startReceiver();
      const frontendPort = await freePort();
      instancePorts = [await freePort(), await freePort()];
      publicUrl = `http://127.0.0.1:${frontendPort}`;
      // What every instance shares (docs/operations/scaling-out.md, "Settings").
      env = {
        DATABASE_URL: database.url,
        PUBLIC_URL: publicUrl,
        AUTH_ISSUER: '',
        API_RESOURCE: '',
        AUTH_JWKS_FILE: '',
        TRUST_PROXY: '127.0.0.1',
        KEY_ENCRYPTION_KEY: KEK,
        WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOWED_NETWORKS: 'loopback',
        WEBHOOK_RETRY_SCHEDULE: '0s,200ms,500ms,1s,2s,5s',
        SHUTDOWN_DRAIN: '5s',
        // New signing keys are published this long before they sign: every instance hears of them at once (NOTIFY).
        KEY_ROTATION_DELAY: '3s',
        METRICS_PORT: 'off',
        LOG_LEVEL: 'info', // child-server.ts waits for the "listening at" line
      };
      handle = openDatabase(database.url, databaseOptions(loadConfig({ DATABASE_URL: database.url })));
      const made = await createClient(handle.db, {
        name: 'cluster load',
        type: 'confidential',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: SCOPES.split(' '),
        corsOrigins: [],
        firstParty: false,
      });
      client = { id: made.record.clientId, secret: made.clientSecret! };
      // Started together on a fresh database: they create one key set between them.
      instances.push(...(await Promise.all(instancePorts.map((port) => startInstance(port)))));
      const keys = await handle.db.selectFrom('signing_keys').select(['use', 'alg']).execute();
      assert.deepEqual(
        keys.map((k) => `${k.use} ${k.alg}`).sort(),
        ['cookie HS256', 'jws ES256', 'jws RS256'],
        'one key set',
      );
      dispatcher = await startDispatcher();
      const dir = mkdtempSync(join(tmpdir(), 'signet-haproxy-'));
      const cfg = join(dir, 'haproxy.cfg');
      writeFileSync(cfg, haproxyConfig(frontendPort, instancePorts));
      haproxy = await startDaemon({
        name: 'haproxy',
        binary: HAPROXY,
        args: ['-db', '-f', cfg],
        dir,
        ports: [frontendPort],
      });
      await waitUntil(
        async () => (await call(publicUrl, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200,
        20_000,
        () => `HAProxy never routed /readyz: ${haproxy?.output()}`,
      );
    });

    after(async () => {
      await haproxy?.stop();
      for (const instance of instances) await instance?.stop();
      if (dispatcher && dispatcher.exitCode === null) {
        dispatcher.kill('SIGKILL');
        await withDeadline(once(dispatcher, 'exit'), 10_000, 'signet dispatcher exiting');
      }
      await receiver?.close();
      await handle?.db.destroy();
      await database?.drop();
    });

    function startInstance(port: number): Promise<ChildServer> {
      return startChildServer({
        env: { ...env, PORT: String(port), WEBHOOK_DISPATCHER: 'false' },
        readyTimeoutMs: 90_000,
      });
    }

    /** `signet dispatcher`: the webhook dispatcher alone, as scaling-out.md runs it beside the API instances. */
    async function startDispatcher(): Promise<ChildProcess> {
      const child = spawn(process.execPath, [BIN, 'dispatcher'], {
        env: { ...process.env, ...env, LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await waitUntil(
        () => {
          if (child.exitCode !== null) throw new Error(`signet dispatcher exited with ${child.exitCode}: ${output}`);
          return /webhook dispatcher started/.test(output);
        },
        30_000,
        () => `signet dispatcher did not start: ${output}`,
      );
      return child;
    }

    async function ready(port: number): Promise<void> {
      await waitUntil(
        async () =>
          (await call(`http://127.0.0.1:${port}`, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200,
        30_000,
        () => `the instance on port ${port} is not ready`,
      );
    }

    /** SIGTERM (the instance drains, then exits 0), then started again on the same port. */
    async function roll(i: number): Promise<void> {
      const instance = instances[i]!;
      instance.child.kill('SIGTERM');
      assert.equal(await instance.waitForExit(30_000), 0, instance.output());
      instances[i] = await startInstance(instancePorts[i]!);
      await ready(instancePorts[i]!);
    }

    async function kill9(i: number): Promise<void> {
      const instance = instances[i]!;
      instance.child.kill('SIGKILL');
      await instance.waitForExit(10_000);
      instances[i] = await startInstance(instancePorts[i]!);
      await ready(instancePorts[i]!);
    }

    /** `signet keys rotate` as an operator runs it, without blocking the load (spawnSync would stall the workers). */
    async function rotateKeys(): Promise<void> {
      const child = spawn(process.execPath, [BIN, 'keys', 'rotate'], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const [code] = (await withDeadline(once(child, 'exit'), 60_000, () => `signet keys rotate: ${output}`)) as [
        number,
      ];
      assert.equal(code, 0, `signet keys rotate: ${output}`);
    }

    async function token(stats: RetryStats, kids: Set<string>): Promise<string> {
      const answer = await retryingCall(
        publicUrl,
        'POST',
        '/oauth/token',
        {
          form: { grant_type: 'client_credentials', scope: SCOPES, client_id: client.id, client_secret: client.secret },
        },
        stats,
      );
      if (answer.status !== 200) throw new Error(`token: ${answer.status} ${answer.text}`);
      const accessToken = answer.json.access_token as string;
      kids.add(JSON.parse(Buffer.from(accessToken.split('.')[0]!, 'base64url').toString()).kid as string);
      return accessToken;
    }

    /** One worker: create, read, pay and list orders until `running()` is false, a fresh token every few rounds. */
    async function worker(running: () => boolean, stats: RetryStats, tally: Tally): Promise<void> {
      let accessToken = await token(stats, tally.kids);
      for (let round = 0; running(); round++) {
        if (round % 5 === 4) accessToken = await token(stats, tally.kids);
        const check = (what: string, answer: { status: number; text: string }, expected: number): boolean => {
          tally.requests++;
          if (answer.status === 401) tally.unauthorized.push(`${what}: ${answer.text}`);
          else if (answer.status !== expected) tally.failures.push(`${what}: ${answer.status} ${answer.text}`);
          return answer.status === expected;
        };
        const key = randomUUID();
        const created = await retryingCall(
          publicUrl,
          'POST',
          '/api/orders',
          {
            token: accessToken,
            idempotencyKey: key,
            body: { CustomerId: CUSTOMER, Total: round + 1 },
          },
          stats,
        );
        if (!check('create', created, 201)) continue;
        const id = created.json.Id as number;
        tally.created.set(key, id);
        check('read', await retryingCall(publicUrl, 'GET', `/api/orders/${id}`, { token: accessToken }, stats), 200);
        const paid = await retryingCall(
          publicUrl,
          'POST',
          `/api/orders/${id}/pay`,
          {
            token: accessToken,
            idempotencyKey: randomUUID(),
          },
          stats,
        );
        if (check('pay', paid, 200)) tally.paid.add(id);
        check('list', await retryingCall(publicUrl, 'GET', '/api/orders?limit=5', { token: accessToken }, stats), 200);
      }
    }

    test(
      '0 failed requests, 0 × 401, 0 orders lost or doubled, every event delivered',
      { timeout: 170_000 * ROUNDS },
      async () => {
        const owner = await token(newRetryStats(), new Set());
        const endpoint = await retryingCall(
          publicUrl,
          'POST',
          '/api/webhooks',
          {
            token: owner,
            idempotencyKey: randomUUID(),
            body: { Url: `${receiver.url}/events`, Events: ['order.created', 'order.paid'] },
          },
          newRetryStats(),
        );
        assert.equal(endpoint.status, 201, endpoint.text);
        const secret = endpoint.json.Secret as string;

        const tally: Tally = {
          requests: 0,
          failures: [],
          unauthorized: [],
          created: new Map(),
          paid: new Set(),
          kids: new Set(),
        };
        const stats = newRetryStats();
        let running = true;
        const load = Promise.all(Array.from({ length: WORKERS }, () => worker(() => running, stats, tally)));
        const chaos = async (): Promise<string[]> => {
          const steps: string[] = [];
          const step = async (name: string, run: () => Promise<void> | void): Promise<void> => {
            const before = tally.created.size;
            const started = Date.now();
            await run();
            const seconds = ((Date.now() - started) / 1000).toFixed(1);
            steps.push(`${name} (${tally.created.size - before} orders in ${seconds} s)`);
          };
          await waitUntil(
            () => tally.created.size >= 20,
            30_000,
            () => `the load did not start: ${JSON.stringify(tally.failures.slice(0, 3))}`,
          );
          // CLUSTER_TEST_ROUNDS repeats the faults for a longer run by hand (docs/benchmarks.md); CI runs one round.
          for (let round = 1; round <= ROUNDS; round++) {
            await step(`roll instance 1`, () => roll(0));
            await step(`roll instance 2`, () => roll(1));
            const kidsBefore = tally.kids.size;
            await step('rotate the signing keys', rotateKeys);
            await step('kill -9 instance 1 and start it again', () => kill9(0));
            await step('a token signed with the new key', () =>
              waitUntil(
                () => tally.kids.size > kidsBefore,
                60_000,
                () => `no token signed with the new key yet (kids seen: ${[...tally.kids].join(', ')})`,
              ),
            );
          }
          const target = tally.created.size + 50;
          await step('50 more orders', () =>
            waitUntil(
              () => tally.created.size >= target,
              30_000,
              () => 'load after the faults',
            ),
          );
          return steps;
        };
        let steps: string[];
        try {
          steps = await chaos();
        } finally {
          running = false;
          await withDeadline(load, 60_000, () => `the workers did not finish: ${tally.requests} requests so far`);
        }
        const report = `${tally.requests} requests, ${tally.created.size} orders, ${stats.retries} retries ${JSON.stringify(stats.causes)}; ${steps.join('; ')}; kids ${[...tally.kids].join(' ')}`;
        assert.deepEqual(tally.unauthorized, [], `valid tokens refused: ${report}`);
        assert.deepEqual(tally.failures, [], `failed after retries: ${report}`);

        // Every acknowledged order is there once: one row per acknowledged create, none more.
        const ids = [...tally.created.values()];
        const rows = await handle.db.selectFrom('orders').select(['id', 'status']).execute();
        assert.equal(rows.length, ids.length, `orders in the database vs acknowledged: ${report}`);
        assert.deepEqual(new Set(rows.map((r) => Number(r.id))), new Set(ids), report);
        for (const row of rows) if (tally.paid.has(Number(row.id))) assert.equal(row.status, 'paid', `order ${row.id}`);

        // Every event of those orders reaches the receiver, signed with the endpoint's secret.
        const expected = ids.length + tally.paid.size;
        const seen = new Set<string>();
        let verified = 0;
        const delivered = (): Set<string> => {
          for (; verified < receiver.received.length; verified++) {
            const delivery = receiver.received[verified]!;
            const event = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
              Type: string;
              Data: { Id: number };
            };
            seen.add(`${event.Type} ${event.Data.Id}`);
          }
          return seen;
        };
        const deliveryWait = Date.now();
        await waitUntil(
          () => delivered().size >= expected,
          60_000,
          () => `${delivered().size} of ${expected} events delivered; ${report}`,
        );
        for (const id of ids) assert.ok(delivered().has(`order.created ${id}`), `order.created ${id}`);
        console.log(
          `cluster: ${report}; ${receiver.received.length} deliveries for ${expected} events, the last ${((Date.now() - deliveryWait) / 1000).toFixed(1)} s after the load stopped`,
        );
      },
    );
  });
}
