// Losing PostgreSQL connections under load never kills the process (docs/operations/failure-behaviour.md,
// "PostgreSQL"). `signet serve` and `signet dispatcher` run as real child processes, their connections through a TCP
// proxy the test controls; 16 clients write orders and one asks /oauth/token for client-credentials tokens, for 30 s,
// while the test terminates every backend of both processes again and again (as an administrator or a
// failover would: 57P01) and resets their TCP connections. At the end both processes are alive and
// serving, every acknowledged order is in the database and is delivered, every failed request was a 503 with
// Retry-After (never a 500 or a dropped connection), and the dispatcher, woken by LISTEN/NOTIFY on a
// connection it had to open again, still delivers. PostgreSQL only.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createTestDatabase, TEST_WEBHOOK_SECRET_KEY, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { closeWithin, COMMAND_TIMEOUT_MS, listenOnLoopback, outcome, withDeadline } from '../helpers/deadline.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE, type TestIssuer } from '../helpers/tokens.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  startReceiver,
  waitUntil,
  WEBHOOK_SCOPES,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const LOAD_MS = 30_000;
const WRITERS = 16;
/** Between two faults; they alternate: terminate every backend, then reset every connection at the proxy. */
const FAULT_EVERY_MS = 400;
/** Only there so that a hang fails the test instead of stalling it. */
const ANSWER_DEADLINE_MS = 20_000;
const OUTPUT_KEPT = 64 * 1024;
/** For the dispatcher to deliver the backlog the faults left behind (it drains at hundreds per second). */
const DRAIN_DEADLINE_MS = 120_000;

interface Child {
  process: ChildProcess;
  alive(): boolean;
  /** The last OUTPUT_KEPT characters it wrote (stdout and stderr). */
  output(): string;
}

function startChild(command: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, [BIN, command], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer): void => void (output = (output + chunk.toString()).slice(-OUTPUT_KEPT));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { process: child, alive: () => child.exitCode === null && child.signalCode === null, output: () => output };
}

async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listenOnLoopback(server);
  await closeWithin(server, 'the free-port probe');
  return port;
}

function withApplicationName(url: string, name: string): string {
  const named = new URL(url);
  named.searchParams.set('application_name', name);
  return named.toString();
}

interface Tally {
  created: number[];
  statuses: Map<string, number>;
  /** Anything but a 201/200 or a well-formed 503: the test fails with these. */
  wrong: string[];
}

function count(tally: Tally, key: string): void {
  tally.statuses.set(key, (tally.statuses.get(key) ?? 0) + 1);
}

/** A 503 must be problem+json (the API) or temporarily_unavailable (OAuth), with Retry-After, either way. */
function checkUnavailable(tally: Tally, label: string, res: CallResult, oauth: boolean): void {
  const retryAfter = res.headers.get('retry-after');
  const shaped = oauth
    ? res.json?.error === 'temporarily_unavailable'
    : res.headers.get('content-type')?.startsWith('application/problem+json') &&
      /temporarily-unavailable$/.test(res.json?.type);
  if (!shaped || !retryAfter || !/^\d+$/.test(retryAfter))
    tally.wrong.push(
      `${label}: 503 without its shape or Retry-After: ${res.headers.get('content-type')} ${retryAfter} ${res.text.slice(0, 300)}`,
    );
}

if (testDialects().includes('postgres'))
  describe('PostgreSQL connections lost under load [postgres]', () => {
    const app = `signet-load-${randomBytes(4).toString('hex')}`;
    let database: TestDatabase;
    let proxy: TcpProxy;
    let receiver: TestReceiver;
    let issuer: TestIssuer;
    let admin: pg.Client;
    let serve: Child;
    let dispatcher: Child;
    let url: string;

    before(async () => {
      database = await createTestDatabase('postgres');
      proxy = TcpProxy.for(database.url, 5432);
      await proxy.start();
      receiver = await startReceiver();
      issuer = await createTestIssuer();
      admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      const common = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY, LOG_LEVEL: 'info' };
      serve = startChild('serve', {
        ...common,
        DATABASE_URL: proxy.rewrite(withApplicationName(database.url, `${app}-serve`)),
        PORT: String(port),
        AUTH_ISSUER: TEST_ISSUER,
        API_RESOURCE: TEST_RESOURCE,
        AUTH_JWKS_FILE: issuer.jwksFile,
        RATE_LIMIT_MAX: '100000000',
        WEBHOOK_DISPATCHER: 'false',
        LOG_LEVEL: 'warn',
        METRICS_PORT: 'off',
      });
      await waitUntil(
        async () => (await call(url, 'GET', '/readyz').catch(() => undefined))?.status === 200,
        20_000,
        () => `signet serve did not get ready: ${serve.output()}`,
      );
      // The longest poll there is: a delivery that follows a commit within seconds was woken by NOTIFY.
      dispatcher = startChild('dispatcher', {
        ...common,
        DATABASE_URL: proxy.rewrite(withApplicationName(database.url, `${app}-dispatcher`)),
        WEBHOOK_POLL_INTERVAL: '60s',
      });
      await waitUntil(
        () => /webhook dispatcher started/.test(dispatcher.output()),
        20_000,
        () => `signet dispatcher did not start: ${dispatcher.output()}`,
      );
    });

    after(async () => {
      for (const child of [serve, dispatcher]) if (child?.alive()) child.process.kill('SIGKILL');
      await admin?.end();
      await receiver?.close();
      await proxy?.close();
      await database?.drop();
    });

    test('16 writers and token requests for 30 s while backends are terminated and connections reset: the processes live on, nothing acknowledged is lost, failures are 503s', async (t) => {
      const token = await issuer.clientToken(WEBHOOK_SCOPES);
      const endpoint = await call(url, 'POST', '/api/webhooks', {
        token,
        body: { Url: `${receiver.url}/hook`, Events: ['order.created'] },
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      const oauthClient = createOAuthClient(database.url);
      const basic = `Basic ${Buffer.from(`${oauthClient.id}:${oauthClient.secret}`).toString('base64')}`;
      const tokenCall = () =>
        call(url, 'POST', '/oauth/token', {
          rawBody: 'grant_type=client_credentials&scope=orders%3Aread',
          contentType: 'application/x-www-form-urlencoded',
          headers: { authorization: basic },
          signal: AbortSignal.timeout(ANSWER_DEADLINE_MS),
        });
      const first = await tokenCall();
      assert.equal(first.status, 200, `the authorization server answers before the faults: ${first.text}`);

      const orders: Tally = { created: [], statuses: new Map(), wrong: [] };
      const tokens: Tally = { created: [], statuses: new Map(), wrong: [] };
      let running = true;
      const writer = async (n: number): Promise<void> => {
        while (running) {
          const label = `writer ${n}`;
          try {
            const res = await call(url, 'POST', '/api/orders', {
              token,
              body: { CustomerId: CUSTOMER, Total: n + 1 },
              signal: AbortSignal.timeout(ANSWER_DEADLINE_MS),
            });
            count(orders, String(res.status));
            if (res.status === 201) orders.created.push(res.json.Id);
            else if (res.status === 503) checkUnavailable(orders, label, res, false);
            else orders.wrong.push(`${label}: ${res.status} ${res.text.slice(0, 300)}`);
          } catch (err) {
            count(orders, 'no answer');
            orders.wrong.push(`${label}: no answer: ${(err as Error).message} ${String((err as Error).cause ?? '')}`);
          }
        }
      };
      const tokenRequester = async (): Promise<void> => {
        while (running) {
          try {
            const res = await tokenCall();
            count(tokens, String(res.status));
            if (res.status === 503) checkUnavailable(tokens, '/oauth/token', res, true);
            else if (res.status !== 200) tokens.wrong.push(`/oauth/token: ${res.status} ${res.text.slice(0, 300)}`);
          } catch (err) {
            count(tokens, 'no answer');
            tokens.wrong.push(
              `/oauth/token: no answer: ${(err as Error).message} ${String((err as Error).cause ?? '')}`,
            );
          }
        }
      };
      const load = [...Array.from({ length: WRITERS }, (_, n) => writer(n)), tokenRequester()];

      let terminated = 0;
      let terminations = 0;
      let resets = 0;
      const end = Date.now() + LOAD_MS;
      for (let round = 0; Date.now() < end && serve.alive() && dispatcher.alive(); round++) {
        if (round % 2 === 0) {
          const { rowCount } = await admin.query(
            'select pg_terminate_backend(pid) from pg_stat_activity where application_name like $1 and pid <> pg_backend_pid()',
            [`${app}-%`],
          );
          terminations++;
          terminated += rowCount ?? 0;
        } else {
          proxy.reset();
          resets++;
        }
        await new Promise((resolve) => setTimeout(resolve, FAULT_EVERY_MS));
      }
      running = false;
      // Each request has its own deadline; this one only names what a hang would be.
      await withDeadline(
        Promise.all(load),
        ANSWER_DEADLINE_MS + 5000,
        () =>
          `the writers finishing their last requests: orders ${JSON.stringify(Object.fromEntries(orders.statuses))}`,
      );

      const summary = `orders ${JSON.stringify(Object.fromEntries(orders.statuses))}; tokens ${JSON.stringify(Object.fromEntries(tokens.statuses))}; ${terminations} terminations (${terminated} backends), ${resets} resets`;
      t.diagnostic(summary);
      assert.ok(
        serve.alive(),
        `signet serve exited (${serve.process.exitCode ?? serve.process.signalCode}) during the faults; ${summary}\n${serve.output()}`,
      );
      assert.ok(
        dispatcher.alive(),
        `signet dispatcher exited (${dispatcher.process.exitCode ?? dispatcher.process.signalCode}) during the faults; ${summary}\n${dispatcher.output()}`,
      );
      assert.deepEqual(
        [...orders.wrong, ...tokens.wrong].slice(0, 20),
        [],
        `only 201/200 or 503 with Retry-After; ${summary}`,
      );
      assert.ok(orders.created.length >= WRITERS, `the writers were served between the faults: ${summary}`);
      assert.ok(terminated > 0, `backends were terminated: ${summary}`);

      const { rows } = await admin.query<{ id: number }>('select id from orders where id = any($1::bigint[])', [
        orders.created,
      ]);
      const stored = new Set(rows.map((row) => Number(row.id)));
      const lost = orders.created.filter((id) => !stored.has(id));
      assert.deepEqual(lost, [], `every acknowledged order is stored (${orders.created.length} acknowledged)`);

      // Every acknowledged order is delivered at least once: the backlog the faults left (and claims
      // whose outcome was never recorded, once their leases end) drains. Generous: only a hang fails it.
      const delivered = new Set<number>();
      let seen = 0;
      const undelivered = (): number[] => {
        for (; seen < receiver.received.length; seen++) {
          const id = (JSON.parse(receiver.received[seen]!.body) as { Data?: { Id?: number } }).Data?.Id;
          if (id !== undefined) delivered.add(id);
        }
        return orders.created.filter((id) => !delivered.has(id));
      };
      await waitUntil(
        () => undelivered().length === 0,
        DRAIN_DEADLINE_MS,
        () => `${undelivered().length} of ${orders.created.length} acknowledged orders not delivered`,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}; ${await deliveryStates(admin)}\n${dispatcher.output()}`);
      });

      // Serving again, and the dispatcher, listening again, delivers an order created now.
      let created: CallResult | undefined;
      await waitUntil(
        async () =>
          (created = await call(url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 99 } }))
            .status === 201,
        15_000,
        () => `no 201 after the faults: ${created?.status} ${created?.text}`,
      );
      const id = Number(created!.json.Id);
      await waitUntil(
        () => receiver.received.some((d) => (JSON.parse(d.body) as { Data?: { Id?: number } }).Data?.Id === id),
        15_000,
        () =>
          `order ${id} was not delivered (${receiver.received.length} deliveries received); dispatcher output:\n${dispatcher.output()}`,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await deliveryStates(admin, id)}`);
      });
      const again = await tokenCall();
      assert.equal(again.status, 200, `the authorization server serves again: ${again.text}`);
    });
  });

/** What the outbox holds, for a failure message: deliveries per state and lease, and one order's if given. */
async function deliveryStates(admin: pg.Client, orderId?: number): Promise<string> {
  const { rows } = await admin.query<{ state: string; leased: boolean; n: number }>(
    `select state, lease_until > now() as leased, count(*)::int as n from webhook_deliveries group by 1, 2`,
  );
  if (orderId === undefined) return `deliveries ${JSON.stringify(rows)}`;
  const { rows: mine } = await admin.query(
    `select d.state, d.attempt_count, d.next_attempt_at, d.lease_until from webhook_deliveries d
     join webhook_events e on e.id = d.event_id where e.data::jsonb ->> 'Id' = $1`,
    [String(orderId)],
  );
  return `deliveries ${JSON.stringify(rows)}; order ${orderId}'s ${JSON.stringify(mine)}`;
}

/** `signet client create` for a client-credentials client, on the database directly. */
function createOAuthClient(databaseUrl: string): { id: string; secret: string } {
  const result = spawnSync(
    process.execPath,
    [
      BIN,
      'client',
      'create',
      '--name',
      'Load',
      '--type',
      'confidential',
      '--grant',
      'client_credentials',
      '--scope',
      'orders:read',
      '--json',
    ],
    {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
        LOG_LEVEL: 'silent',
      },
      encoding: 'utf8',
      timeout: COMMAND_TIMEOUT_MS,
    },
  );
  assert.equal(result.status, 0, outcome(result));
  const created = JSON.parse(result.stdout) as { client_id: string; client_secret: string };
  return { id: created.client_id, secret: created.client_secret };
}
