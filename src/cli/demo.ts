// `signet demo` (and `npm run demo`): the whole service end to end on this machine, in under a minute,
// on a throw-away SQLite database. Signet runs in process with a compressed retry schedule; a receiver
// built from the consumer kit (src/receiver) verifies and processes every delivery. Each step prints what
// it checked; any surprise (an unexpected status, a missing or duplicated event, a timeout) stops the demo
// with exit code 1, so CI runs it as a smoke test. Everything it started is stopped and removed, also on failure.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.ts';
import { createClient } from '../auth-server/clients/clients.repository.ts';
import { createUser } from '../auth-server/identity/users.repository.ts';
import { loadConfig } from '../config/config.ts';
import { startStandaloneReceiver, type ReceivedEvent } from '../receiver/index.ts';
import { UsageError } from './admin.ts';
import {
  check,
  expectStatus,
  freePort,
  nextIn,
  postSignedDelivery,
  Progress,
  waitFor,
  request,
  type Attempt,
  type Delivery,
  type Reply,
} from './demo-support.ts';

const DEMO_USAGE = 'usage: signet demo   (no options: runs against a temporary SQLite database and removes it)';

/** Compressed so that retries and recovery show within seconds (each delay gets ±20 % jitter). */
const RETRY_SCHEDULE = '0s,1s,2s,3s';
const SCOPES = 'orders:read orders:write events:read webhooks:manage';
const CUSTOMER = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const TOTAL_STEPS = 12;

type Receiver = Awaited<ReturnType<typeof startStandaloneReceiver>>;

export async function demoCommand(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(DEMO_USAGE);
    return 0;
  }
  if (args.length > 0) throw new UsageError(`signet demo takes no arguments\n\n${DEMO_USAGE}`);
  const demo = new Demo();
  const onSignal = (signal: NodeJS.Signals): void => {
    console.log(`\n${signal}: stopping the demo and removing what it created`);
    void demo.cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await demo.run();
    return 0;
  } catch (err) {
    demo.fail(err);
    return 1;
  } finally {
    await demo.cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

class Demo {
  private readonly dir = mkdtempSync(join(tmpdir(), 'signet-demo-'));
  private app: FastifyInstance | undefined;
  private receiver: Receiver | undefined;
  private cleaned = false;
  private readonly progress = new Progress(TOTAL_STEPS);
  private base = '';
  private token = '';
  /** Every event the consumer's handler ran for, in order, across both receiver runs. */
  private readonly processed: ReceivedEvent[] = [];

  fail(err: unknown): void {
    this.progress.fail(err);
  }

  async cleanup(): Promise<void> {
    if (this.cleaned) return;
    this.cleaned = true;
    await this.receiver?.close().catch(() => undefined);
    await this.app?.close().catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  async run(): Promise<void> {
    console.log('Signet demo: authorization server, orders API and signed webhooks, received by the consumer kit.');
    console.log(`Temporary files in ${this.dir} (removed at the end).`);

    // 1. The producer.
    this.progress.heading('Start Signet on a temporary SQLite database');
    const port = await freePort(); // the issuer must know its URL before the server listens
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(this.dir, 'signet.db')}`,
      LOG_LEVEL: 'silent',
      WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
      WEBHOOK_POLL_INTERVAL: '200ms',
      WEBHOOK_TIMEOUT: '5s',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWED_NETWORKS: 'loopback',
      // The demo reads no metrics, and the default port (9464) may be held by a `signet serve` on this machine.
      METRICS_PORT: 'off',
    });
    this.app = await buildApp(config, { logger: false });
    await this.app.listen({ host: '127.0.0.1', port });
    this.base = `http://127.0.0.1:${port}`;
    this.progress.ok(`listening on ${this.base} (issuer ${config.oauthIssuer}, API ${config.apiResource})`);
    this.progress.note(`retry schedule ${RETRY_SCHEDULE} (compressed for the demo; the default spans about 28 hours)`);

    // 2. Administration: what `signet client create` and `signet user create` do.
    this.progress.heading('Create an OAuth client and a user');
    const db = this.app.database.db;
    const { record: client, clientSecret } = await createClient(db, {
      name: 'Demo shop backend',
      type: 'confidential',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: SCOPES.split(' '),
      corsOrigins: [],
      firstParty: false,
    });
    check(clientSecret, 'a confidential client must get a secret');
    this.progress.ok(`client ${client.clientId} (client_credentials; ${SCOPES})`);
    const user = await createUser(db, {
      email: 'ada@example.test',
      name: 'Ada Lovelace',
      password: randomBytes(12).toString('base64url'),
    });
    this.progress.ok(`user ${user.id} (${user.email}), who could sign in at ${config.oauthIssuer}/auth`);

    // 3. A token.
    this.progress.heading('Obtain a client-credentials access token');
    const discovery = await request('GET', `${config.oauthIssuer}/.well-known/openid-configuration`);
    expectStatus(discovery, 200, 'discovery document');
    const tokenEndpoint = String(discovery.json.token_endpoint);
    const tokenReply = await request('POST', tokenEndpoint, {
      form: { grant_type: 'client_credentials', scope: SCOPES, resource: config.apiResource },
      headers: {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`,
      },
    });
    expectStatus(tokenReply, 200, 'token request');
    this.token = String(tokenReply.json.access_token);
    check(this.token.split('.').length === 3, 'the access token is not a JWT');
    this.progress.ok(
      `POST ${new URL(tokenEndpoint).pathname} → 200, ${tokenReply.json.token_type} token, expires in ${tokenReply.json.expires_in} s, scope "${tokenReply.json.scope}"`,
    );

    // 4. The consumer, and the subscription pointing at it.
    this.progress.heading('Start a receiver and register the webhook');
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const receiverDatabase = `sqlite:${join(this.dir, 'receiver.db')}`;
    const handler = (event: ReceivedEvent): void => void this.processed.push(event);
    const receiverOptions = {
      host: '127.0.0.1',
      sources: { orders: [secret] },
      database: receiverDatabase,
      handler,
      retryScheduleMs: [200, 500, 1000],
      logLevel: 'silent' as const,
    };
    this.receiver = await startStandaloneReceiver({ ...receiverOptions, port: 0 });
    const receiverPort = Number(new URL(this.receiver.url).port);
    const webhookUrl = `${this.receiver.url}/webhooks/orders`;
    this.progress.ok(`receiver listening on ${webhookUrl} (inbox ${receiverDatabase.replace(this.dir, '<tmp>')})`);
    const registered = await this.api('POST', '/api/webhooks', {
      body: { Url: webhookUrl, Events: ['*'], Secret: secret, Description: 'signet demo' },
    });
    expectStatus(registered, 201, 'webhook registration');
    const endpointId = String(registered.json.Id);
    this.progress.ok(
      `POST /api/webhooks → 201, endpoint ${endpointId}, events *, secret whsec_… shared with the receiver`,
    );

    // 5. Idempotent create.
    this.progress.heading('Create an order with an Idempotency-Key, then replay the request');
    const key = randomUUID();
    const orderBody = { CustomerId: CUSTOMER, Total: 42.5, Currency: 'EUR' };
    const created = await this.api('POST', '/api/orders', { body: orderBody, headers: { 'idempotency-key': key } });
    expectStatus(created, 201, 'create order');
    const orderId = Number(created.json.Id);
    this.progress.ok(
      `POST /api/orders → 201, order ${orderId}, Status ${created.json.Status}, ${created.json.Total} ${created.json.Currency}`,
    );
    const replay = await this.api('POST', '/api/orders', { body: orderBody, headers: { 'idempotency-key': key } });
    expectStatus(replay, 201, 'replayed create');
    check(replay.json.Id === created.json.Id, `the replay returned order ${String(replay.json.Id)}, not ${orderId}`);
    check(replay.headers.get('idempotent-replayed') === 'true', 'the replay is missing Idempotent-Replayed: true');
    const list = await this.api('GET', '/api/orders');
    expectStatus(list, 200, 'list orders');
    const items = list.json.Items as unknown[];
    check(items.length === 1, `expected 1 order after the replay, found ${items.length}`);
    this.progress.ok(
      `same request again → 201, same order ${orderId}, Idempotent-Replayed: true; orders in the list: 1`,
    );

    // 6. Conditional read.
    this.progress.heading('Read the order with its ETag, then revalidate');
    const read = await this.api('GET', `/api/orders/${orderId}`);
    expectStatus(read, 200, 'read order');
    const etag = read.headers.get('etag');
    check(etag, 'the order has no ETag');
    this.progress.ok(`GET /api/orders/${orderId} → 200, ETag ${etag}`);
    const revalidated = await this.api('GET', `/api/orders/${orderId}`, { headers: { 'if-none-match': etag } });
    expectStatus(revalidated, 304, 'conditional read');
    check(revalidated.text === '', 'a 304 must have no body');
    this.progress.ok('same GET with If-None-Match → 304 Not Modified, no body');

    // 7. State machine.
    this.progress.heading('Pay the order, then try to pay it again');
    const paid = await this.api('POST', `/api/orders/${orderId}/pay`);
    expectStatus(paid, 200, 'pay');
    check(paid.json.Status === 'paid', `after pay the order is ${String(paid.json.Status)}`);
    this.progress.ok(`POST /api/orders/${orderId}/pay → 200, Status paid`);
    const payAgain = await this.api('POST', `/api/orders/${orderId}/pay`);
    expectStatus(payAgain, 409, 'second pay');
    this.progress.ok(
      `pay again → 409 ${payAgain.headers.get('content-type')?.split(';')[0]}: "${String(payAgain.json.detail ?? payAgain.json.title)}"`,
    );

    // 8. Deletion (only pending or cancelled orders may be deleted).
    this.progress.heading('Delete an order');
    const deletePaid = await this.api('DELETE', `/api/orders/${orderId}`);
    expectStatus(deletePaid, 409, 'delete of a paid order');
    this.progress.ok(`DELETE /api/orders/${orderId} → 409: a paid order cannot be deleted`);
    const second = await this.api('POST', '/api/orders', {
      body: { CustomerId: CUSTOMER, Total: 9.99, Currency: 'USD' },
    });
    expectStatus(second, 201, 'create a second order');
    const secondId = Number(second.json.Id);
    const deleted = await this.api('DELETE', `/api/orders/${secondId}`);
    expectStatus(deleted, 204, 'delete');
    const gone = await this.api('GET', `/api/orders/${secondId}`);
    expectStatus(gone, 404, 'read a deleted order');
    this.progress.ok(`new pending order ${secondId} → DELETE 204, then GET → 404`);

    // 9. What the consumer saw.
    this.progress.heading('Signed deliveries arrive at the receiver, verified and processed once');
    const expected = ['order.created', 'order.paid', 'order.created', 'order.deleted'];
    await waitFor(
      () => this.processed.length >= expected.length,
      () => `expected ${expected.length} processed events, got ${this.processed.length}`,
    );
    await this.waitForDeliveries(
      endpointId,
      expected.length,
      (d) => d.every((x) => x.State === 'succeeded'),
      'every delivery succeeded',
    );
    check(
      this.processed.length === expected.length,
      `expected ${expected.length} processed events, got ${this.processed.length}`,
    );
    check(
      JSON.stringify(this.processed.map((e) => e.type)) === JSON.stringify(expected),
      `processed ${this.processed.map((e) => e.type).join(', ')}; expected ${expected.join(', ')} in that order`,
    );
    for (const event of this.processed)
      this.progress.ok(
        `${event.type.padEnd(14)} ${event.id}  delivery ${event.deliveryId}  signature verified, processed`,
      );
    const first = this.processed[0]!;
    const forged = await postSignedDelivery(webhookUrl, {
      id: `evt_${randomBytes(16).toString('hex')}`,
      deliveryId: `dlv_${randomBytes(16).toString('hex')}`,
      secret: 'whsec_not-the-secret',
    });
    expectStatus(forged, 401, 'forged delivery');
    this.progress.ok(
      `a forged delivery (signed with another secret) → 401 ${String(forged.json.title ?? '')}`.trimEnd(),
    );
    const duplicate = await postSignedDelivery(webhookUrl, {
      id: first.id,
      deliveryId: first.deliveryId!,
      secret,
      type: first.type,
    });
    expectStatus(duplicate, 200, 'replayed delivery');
    check(
      duplicate.json.Duplicate === true,
      `a replayed delivery id should answer {"Received":true,"Duplicate":true}, got ${duplicate.text}`,
    );
    this.progress.ok(`the same delivery id sent again → 200 ${duplicate.text}, not processed again`);

    // 10. Outage.
    this.progress.heading('Stop the receiver: the producer retries');
    await this.receiver.close();
    this.receiver = undefined;
    this.progress.ok(`receiver stopped (port ${receiverPort} refuses connections)`);
    const third = await this.api('POST', '/api/orders', {
      body: { CustomerId: CUSTOMER, Total: 120, Currency: 'USD' },
    });
    expectStatus(third, 201, 'create a third order');
    const thirdId = Number(third.json.Id);
    const thirdPaid = await this.api('POST', `/api/orders/${thirdId}/pay`);
    expectStatus(thirdPaid, 200, 'pay the third order');
    this.progress.ok(`order ${thirdId} created and paid while the receiver is down → 2 more events`);
    const during = await this.waitForDeliveries(
      endpointId,
      6,
      (d) => d.filter((x) => x.State === 'pending' && x.AttemptCount >= 2).length >= 2,
      'two deliveries failed twice',
    );
    for (const delivery of during.filter((d) => d.State === 'pending').reverse()) {
      const detail = await this.api('GET', `/api/webhooks/deliveries/${delivery.Id}`);
      expectStatus(detail, 200, 'delivery detail');
      const attempts = (detail.json.Attempts as Attempt[])
        .map((a) => `#${a.Attempt} failed (${a.ErrorKind ?? a.StatusCode})`)
        .join(', ');
      this.progress.ok(
        `${delivery.EventType.padEnd(14)} ${delivery.Id}  pending; attempts: ${attempts}; next in ${nextIn(detail.json.NextAttemptAtUtc)}`,
      );
    }

    // 11. Recovery.
    this.progress.heading('Restart the receiver on the same port and inbox: recovery');
    this.receiver = await startStandaloneReceiver({ ...receiverOptions, port: receiverPort });
    this.progress.ok(`receiver back on ${this.receiver.url}`);
    await waitFor(
      () => this.processed.length >= 6,
      () => `expected 6 processed events, got ${this.processed.length}`,
    );
    const after = await this.waitForDeliveries(
      endpointId,
      6,
      (d) => d.every((x) => x.State === 'succeeded'),
      'every delivery succeeded',
    );
    for (const event of this.processed.slice(expected.length))
      this.progress.ok(`${event.type.padEnd(14)} ${event.id}  delivery ${event.deliveryId}  processed after the retry`);
    const ids = this.processed.map((e) => e.id);
    check(new Set(ids).size === ids.length, `an event was processed twice: ${ids.join(', ')}`);
    check(this.processed.length === 6, `expected 6 processed events, got ${this.processed.length}`);
    await waitFor(
      async () => (await this.receiver!.inbox.list({ state: 'pending' })).length === 0,
      () => 'inbox entries still pending',
    );
    const inbox = await this.receiver.inbox.list();
    check(
      inbox.length === 6 && inbox.every((e) => e.state === 'done'),
      `the inbox should hold 6 done entries, holds ${inbox.map((e) => e.state).join(', ')}`,
    );
    this.progress.ok(
      'every delivery succeeded; each of the 6 events processed exactly once; inbox: 6 done, 0 pending, 0 dead',
    );

    // 12. Summary.
    this.progress.heading('Summary');
    const attempts = after.reduce((sum, d) => sum + d.AttemptCount, 0);
    const counts = new Map<string, number>();
    for (const e of this.processed) counts.set(e.type, (counts.get(e.type) ?? 0) + 1);
    this.progress.ok(`orders: 3 created (1 replayed without a duplicate), 2 paid, 1 deleted; 304 and 409 as specified`);
    this.progress.ok(`events: ${this.processed.length} (${[...counts].map(([t, n]) => `${n} ${t}`).join(', ')})`);
    this.progress.ok(
      `deliveries: ${after.length} succeeded, ${attempts} attempts (${attempts - after.length} failed while the receiver was down)`,
    );
    this.progress.ok(
      `receiver: ${this.processed.length} processed, 0 twice; 1 forged delivery refused; 1 duplicate acknowledged`,
    );
    console.log(`\nDemo passed in ${this.progress.elapsed()}.`);
  }

  private api(
    method: string,
    path: string,
    options: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    return request(method, `${this.base}${path}`, {
      ...options,
      headers: { authorization: `Bearer ${this.token}`, ...options.headers },
    });
  }

  private async waitForDeliveries(
    endpointId: string,
    count: number,
    condition: (deliveries: Delivery[]) => boolean,
    what: string,
  ): Promise<Delivery[]> {
    let latest: Delivery[] = [];
    await waitFor(
      async () => {
        const reply = await this.api('GET', `/api/webhooks/${endpointId}/deliveries?limit=100`);
        expectStatus(reply, 200, 'delivery log');
        latest = reply.json.Items as Delivery[];
        return latest.length >= count && condition(latest);
      },
      () =>
        `${what}: the delivery log shows ${latest.map((d) => `${d.EventType} ${d.State} (${d.AttemptCount} attempts)`).join(', ') || 'nothing'}`,
    );
    return latest;
  }
}
