// Webhooks benchmark (`npm run bench -- webhooks`), run from bench/run.ts. Three kinds of process:
//
// - bench/webhooks/webhooks-server.ts: Signet (buildApp, with the dispatcher inside `serve` as by default), one
//   process and one fresh database per scenario;
// - bench/webhooks/webhooks-receiver.ts: a plain node:http receiver that verifies every X-Service-Signature-256
//   (HMAC-SHA256 of the raw body, constant-time compare), parses the JSON, counts and timestamps;
// - this one, the load generator: orders through the HTTP API (undici), and the baseline.
//
// Scenarios (ids for BENCH_SCENARIOS):
//   baseline, baseline-end     a bare undici POST loop (one keep-alive Agent with the dispatcher's connection
//                              limit, as many requests in flight as the dispatcher can have) sending signed
//                              bodies of a delivery's shape and size to the same receiver: what this receiver
//                              takes on this machine; measured first and last, the higher counts
//   webhooks:<db>:latency      open loop: orders at a steady BENCH_WEBHOOKS_RATE (200) events/s on a fixed
//                              schedule; latency of each delivery from the event's OccurredAtUtc (and from
//                              the 201 reaching the client) to its receipt
//   webhooks:<db>:live         closed loop: BENCH_WEBHOOKS_ORDER_CONNECTIONS (8) clients create orders as
//                              fast as they are answered; verified deliveries/s at the receiver
//   webhooks:<db>:backlog      BENCH_WEBHOOKS_BACKLOG_ORDERS (750 × BENCH_SECONDS) orders created with
//                              WEBHOOK_DISPATCHER=false, then what `signet dispatcher` runs is started on
//                              that database: deliveries/s while it drains the outbox (BENCH_SECONDS from the
//                              first receipt, or until the outbox is empty)
//   webhooks:sqlite:<kind>-sync-normal   diagnostic, only when named: the same with SQLITE_SYNCHRONOUS=NORMAL
// <db> is sqlite, and postgres with BENCH_POSTGRES_URL. Every order fans out to BENCH_WEBHOOKS_ENDPOINTS (4)
// endpoints subscribed to order.created, all on the receiver (one origin, four paths). After the load the
// run waits up to BENCH_WEBHOOKS_DRAIN_SECONDS (10) for what is still owed, closes the instance and checks
// the receiver against the database (every succeeded delivery verified, none failed, none missing).
// BENCH_WEBHOOKS_SQL=1 also prints the SQL statements the Signet process ran per delivery in each window;
// BENCH_WEBHOOKS_CONCURRENCY overrides WEBHOOK_CONCURRENCY (default 64).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Agent, Pool, request } from 'undici';
import { loadConfig } from '../../src/config/config.ts';
import { toRepresentation } from '../../src/orders/orders.representation.ts';
import { newId } from '../../src/webhooks/outbox/events.catalogue.ts';
import { USER_AGENT } from '../../src/webhooks/runtime.ts';
import { deliveryBody, signatureHeaders, SigningSecret } from '../../src/webhooks/delivery/signing.ts';
import type { DispatcherStats } from '../../src/webhooks/delivery/dispatcher.ts';
import { forkBenchChild, type BenchChild, type MeasuredMessage } from '../lib/child-control.ts';
import { finishRun, machineBusySeconds, machineInfo } from '../lib/report.ts';
import { createBenchIssuer } from '../api/tokens.ts';
import type { GroupStats, LatencySample, ReceiverMessage, ReceiverRequest } from './webhooks-receiver.ts';
import type {
  SqlStatements,
  WebhookInstanceSpec,
  WebhookServerMessage,
  WebhookServerRequest,
} from './webhooks-server.ts';
import {
  formatWebhooksTable,
  updateWebhooksDocs,
  WEBHOOK_TARGETS,
  type WebhookRow,
  type WebhookSettings,
} from './webhooks-report.ts';

const here = dirname(fileURLToPath(import.meta.url));

export interface WebhooksBenchOptions {
  seconds: number;
  warmupSeconds: number;
  only: Set<string> | undefined;
  postgresUrl: string | undefined;
  profileDir: string | undefined;
  writeDocs: boolean;
  docsFile: string;
}

function setting(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

const DEFAULTS = loadConfig({});
const ENDPOINTS = setting('BENCH_WEBHOOKS_ENDPOINTS', 4);
const ORDER_CONNECTIONS = setting('BENCH_WEBHOOKS_ORDER_CONNECTIONS', 8);
const RATE = setting('BENCH_WEBHOOKS_RATE', 200);
/** How long after the load stops the run waits for deliveries still owed (they are then reported as pending). */
const DRAIN_TIMEOUT_MS = setting('BENCH_WEBHOOKS_DRAIN_SECONDS', 10) * 1000;
/**
 * WEBHOOK_CONCURRENCY: the default (64), which with 4 endpoints × WEBHOOK_ENDPOINT_CONCURRENCY 16 is exactly
 * every slot. The first runs of this benchmark found src/webhooks/delivery/dispatcher.ts livelocking in that state
 * (a wake-up while no slot was free left `#kicked` set and `#run` spun in a loop of resolved promises,
 * starving the event loop); `#claimAndSend` now clears it before the room check. Should a Signet process
 * stop answering again, its scenario fails after ANSWER_TIMEOUT_MS instead of the run hanging.
 */
const ENDPOINT_SLOTS = ENDPOINTS * DEFAULTS.webhookEndpointConcurrency;
const CONCURRENCY = setting('BENCH_WEBHOOKS_CONCURRENCY', DEFAULTS.webhookConcurrency);
/** What the dispatcher can have in flight, and so what the baseline keeps in flight. */
const IN_FLIGHT = Math.min(CONCURRENCY, ENDPOINT_SLOTS);
/** A Signet process that does not answer within this is stuck (see CONCURRENCY). */
const ANSWER_TIMEOUT_MS = 30_000;
const SCOPES = 'orders:read orders:write webhooks:manage';
const ORDER_BODY = JSON.stringify({
  CustomerId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
  Total: 19.99,
  Currency: 'USD',
});

const wallClock = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Receiver = BenchChild<ReceiverMessage, ReceiverRequest> & { url: string };
type Server = BenchChild<WebhookServerMessage, WebhookServerRequest>;

/** A request to the Signet process that fails, rather than hangs, when its event loop is stuck. */
async function ask(
  server: Server,
  message: Parameters<Server['request']>[0],
  expect: WebhookServerMessage['type'],
): Promise<WebhookServerMessage> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `the Signet process did not answer "${message.type}" within ${ANSWER_TIMEOUT_MS / 1000} s: its event loop is blocked (dispatcher livelock? see CONCURRENCY in bench/webhooks/webhooks.ts)`,
          ),
        ),
      ANSWER_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([server.request(message, expect), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Receiver and measurement windows
// ---------------------------------------------------------------------------------------------

async function receiverStats(receiver: Receiver): Promise<{ groups: Record<string, GroupStats>; at: number }> {
  const reply = (await receiver.request({ type: 'stats' }, 'stats')) as Extract<ReceiverMessage, { type: 'stats' }>;
  return { groups: reply.groups, at: reply.at };
}

const verifiedIn = (stats: { groups: Record<string, GroupStats> }, group: string) => stats.groups[group]?.verified ?? 0;

/** Polls the receiver until `expected` deliveries of the group have verified; returns how many did. */
async function drain(receiver: Receiver, group: string, expected: number): Promise<GroupStats | undefined> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    const stats = (await receiverStats(receiver)).groups[group];
    if ((stats?.verified ?? 0) >= expected || Date.now() > deadline) return stats;
    await sleep(50);
  }
}

interface CpuWindow {
  label: string;
  startedAt: number;
  clientCpu: NodeJS.CpuUsage;
  busy: number;
}

interface CpuResult {
  seconds: number;
  server: MeasuredMessage | undefined;
  receiver: MeasuredMessage;
  clientCores: number;
  otherCores: number;
  sql: SqlStatements | undefined;
}

const SQL_STATS = process.env.BENCH_WEBHOOKS_SQL === '1';

/** BENCH_WEBHOOKS_SQL=1: the statements the Signet process ran in the window, per delivery, slowest total first. */
function printSqlStats(statements: SqlStatements, deliveries: number): void {
  const rows = Object.entries(statements).sort((a, b) => b[1].ms - a[1].ms);
  console.log(
    `\n    SQL in the window (${int(deliveries)} deliveries): executions and wall time per delivery, time per execution`,
  );
  for (const [text, { count, ms }] of rows.slice(0, 15))
    console.log(
      `    ${(count / deliveries).toFixed(2).padStart(6)}/dlv ${((ms * 1000) / deliveries).toFixed(0).padStart(6)} µs/dlv ${((ms * 1000) / count).toFixed(0).padStart(6)} µs  ${text}`,
    );
}

async function openWindow(receiver: Receiver, server: Server | undefined, label: string): Promise<CpuWindow> {
  if (server && SQL_STATS) await ask(server, { type: 'sql-stats' }, 'sql-stats');
  await Promise.all([
    receiver.request({ type: 'measure-start', label: `receiver-${label}` }, 'measure-started'),
    server && ask(server, { type: 'measure-start', label }, 'measure-started'),
  ]);
  return { label, startedAt: performance.now(), clientCpu: process.cpuUsage(), busy: machineBusySeconds() };
}

async function closeWindow(receiver: Receiver, server: Server | undefined, window: CpuWindow): Promise<CpuResult> {
  const seconds = (performance.now() - window.startedAt) / 1000;
  const client = process.cpuUsage(window.clientCpu);
  const busy = machineBusySeconds() - window.busy;
  const [recv, serv] = await Promise.all([
    receiver.request(
      { type: 'measure-stop', label: `receiver-${window.label}` },
      'measured',
    ) as Promise<MeasuredMessage>,
    server && (ask(server, { type: 'measure-stop', label: window.label }, 'measured') as Promise<MeasuredMessage>),
  ]);
  const cores = (m: MeasuredMessage | undefined) => (m ? (m.cpuUserUs + m.cpuSystemUs) / 1e6 / seconds : 0);
  const clientCores = (client.user + client.system) / 1e6 / seconds;
  const sql =
    server && SQL_STATS
      ? (
          (await ask(server, { type: 'sql-stats' }, 'sql-stats')) as Extract<
            WebhookServerMessage,
            { type: 'sql-stats' }
          >
        ).statements
      : undefined;
  return {
    seconds,
    server: serv,
    receiver: recv,
    clientCores,
    otherCores: Math.max(0, busy / seconds - cores(serv) - cores(recv) - clientCores),
    sql,
  };
}

function cpuColumns(
  cpu: CpuResult,
  deliveries: number,
): Pick<
  WebhookRow,
  'serverCpuUsPerDelivery' | 'serverCores' | 'receiverCores' | 'clientCores' | 'otherCores' | 'serverElu'
> {
  const serverUs = cpu.server ? cpu.server.cpuUserUs + cpu.server.cpuSystemUs : NaN;
  return {
    serverCpuUsPerDelivery: deliveries > 0 ? serverUs / deliveries : NaN,
    serverCores: serverUs / 1e6 / cpu.seconds,
    receiverCores: (cpu.receiver.cpuUserUs + cpu.receiver.cpuSystemUs) / 1e6 / cpu.seconds,
    clientCores: cpu.clientCores,
    otherCores: cpu.otherCores,
    serverElu: cpu.server?.eventLoopUtilization ?? NaN,
  };
}

function writeProfileMeta(cpu: CpuResult, scenario: string, deliveries: number, orders: number): void {
  if (cpu.sql) printSqlStats(cpu.sql, deliveries);
  const profile = cpu.server?.profile;
  if (profile)
    writeFileSync(
      profile.replace(/\.cpuprofile$/, '.meta.json'),
      JSON.stringify({
        scenario,
        label: `${scenario} (per delivery)`,
        requests: deliveries,
        orders,
        seconds: cpu.seconds,
      }),
    );
}

// ---------------------------------------------------------------------------------------------
// Baseline: a bare undici POST loop to the same receiver
// ---------------------------------------------------------------------------------------------

/** A delivery body of the real shape and size: the Data of an order.created event, as Signet builds it. */
function sampleData(id: number): string {
  const at = new Date();
  return JSON.stringify(
    toRepresentation(
      {
        id,
        customerId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
        totalMinor: 1999,
        currency: 'USD',
        status: 'pending',
        version: 1,
        createdAt: at,
        updatedAt: at,
      },
      'http://127.0.0.1:40000',
      { fields: undefined, include: [] },
    ),
  );
}

async function measureBaseline(
  receiver: Receiver,
  id: string,
  label: string,
  options: WebhooksBenchOptions,
): Promise<WebhookRow> {
  process.stdout.write(`  ${id.padEnd(28)} `);
  const group = id; // "baseline" or "baseline-end": counted apart
  const endpoints = Object.fromEntries(
    Array.from({ length: ENDPOINTS }, (_, i) => [`/${group}/${i}`, `whsec_${randomBytes(32).toString('base64')}`]),
  );
  await receiver.request({ type: 'endpoints', endpoints }, 'endpoints-set');
  const paths = Object.keys(endpoints);
  const signingSecrets = Object.fromEntries(
    Object.entries(endpoints).map(([path, secret]) => [path, new SigningSecret(secret)]),
  );
  // The dispatcher's client (src/webhooks/runtime.ts): one keep-alive Agent with WEBHOOK_CONCURRENCY
  // connections per origin (all endpoints share the receiver's), as many requests in flight as the
  // dispatcher can have.
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  let stop = false;
  let sent = 0;
  let failed = 0;
  const worker = async () => {
    while (!stop) {
      const n = sent++;
      const path = paths[n % paths.length]!;
      const now = new Date();
      const deliveryId = newId('dlv');
      const body = deliveryBody(
        { id: newId('evt'), type: 'order.created', occurredAt: now, dataJson: sampleData(n + 1) },
        now,
      );
      const headers = signatureHeaders({
        headerName: DEFAULTS.webhookHeaderName,
        deliveryId,
        eventType: 'order.created',
        body,
        attemptAt: now,
        secrets: [signingSecrets[path]!],
      });
      try {
        const response = await request(`${receiver.url}${path}`, {
          method: 'POST',
          dispatcher: agent,
          headers: { ...headers, 'content-type': 'application/json', 'user-agent': USER_AGENT },
          body,
        });
        await response.body.text();
        if (response.statusCode !== 200) failed++;
      } catch {
        failed++;
      }
    }
  };
  const workers = Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  await sleep(options.warmupSeconds * 1000);
  const before = await receiverStats(receiver);
  const window = await openWindow(receiver, undefined, id);
  await sleep(options.seconds * 1000);
  const cpu = await closeWindow(receiver, undefined, window);
  const after = await receiverStats(receiver);
  stop = true;
  await workers;
  await agent.close();
  const delivered = verifiedIn(after, group) - verifiedIn(before, group);
  const stats = after.groups[group];
  const row: WebhookRow = {
    id,
    label,
    dialect: '-',
    kind: 'baseline',
    deliveriesPerSecond: delivered / ((after.at - before.at) / 1000),
    ordersPerSecond: NaN,
    deliveries: delivered,
    ...noLatency,
    ...cpuColumns(cpu, delivered),
    bodyBytes: stats && stats.verified > 0 ? stats.bytes / stats.verified : NaN,
    unexpected: failed + (stats?.rejected ?? 0),
    check:
      failed + (stats?.rejected ?? 0) === 0
        ? `all ${int(stats?.verified ?? 0)} verified`
        : `!! ${failed} failed, ${stats?.rejected ?? 0} rejected`,
  };
  console.log(
    `${int(row.deliveriesPerSecond).padStart(7)} deliveries/s  receiver ${row.receiverCores.toFixed(2)} cores, sender ${row.clientCores.toFixed(2)} cores, other ${row.otherCores.toFixed(2)}${row.unexpected > 0 ? `  ${row.check}` : ''}`,
  );
  return row;
}

const noLatency = { p50: NaN, p99: NaN, max: NaN, commitP50: NaN, commitP99: NaN, apiP50: NaN, apiP99: NaN };
const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '');

// ---------------------------------------------------------------------------------------------
// Orders through the API
// ---------------------------------------------------------------------------------------------

interface Instance {
  /** Also the receiver group: its endpoints are `<receiver>/<name>/<n>`. */
  name: string;
  dialect: string;
  pool: Pool;
  token: string;
  /** Orders created (201) so far. */
  orders: number;
  apiFailures: number;
}

interface Created {
  id: number;
  sentAt: number;
  respondedAt: number;
}

async function createOrder(instance: Instance): Promise<Created | undefined> {
  const sentAt = wallClock();
  try {
    const response = await instance.pool.request({
      method: 'POST',
      path: '/api/orders',
      headers: { authorization: `Bearer ${instance.token}`, 'content-type': 'application/json' },
      body: ORDER_BODY,
    });
    const text = await response.body.text();
    const respondedAt = wallClock();
    if (response.statusCode !== 201) {
      instance.apiFailures++;
      return undefined;
    }
    instance.orders++;
    return { id: (JSON.parse(text) as { Id: number }).Id, sentAt, respondedAt };
  } catch {
    instance.apiFailures++;
    return undefined;
  }
}

async function registerEndpoints(instance: Instance, receiver: Receiver): Promise<void> {
  const endpoints: Record<string, string> = {};
  for (let i = 0; i < ENDPOINTS; i++) {
    const path = `/${instance.name}/${i}`;
    const response = await instance.pool.request({
      method: 'POST',
      path: '/api/webhooks',
      headers: { authorization: `Bearer ${instance.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        Url: `${receiver.url}${path}`,
        Events: ['order.created'],
        Description: `bench endpoint ${i}`,
      }),
    });
    const body = (await response.body.json()) as { Secret?: string };
    if (response.statusCode !== 201 || !body.Secret)
      throw new Error(`registering ${path}: ${response.statusCode} ${JSON.stringify(body)}`);
    endpoints[path] = body.Secret;
  }
  await receiver.request({ type: 'endpoints', endpoints }, 'endpoints-set');
}

/** Keeps `connections` order creations in flight until stopped (or until `limit` orders exist). */
function closedLoop(
  instance: Instance,
  connections: number,
  limit = Infinity,
): { stop: () => Promise<void>; done: Promise<void> } {
  let stopped = false;
  let started = 0;
  const worker = async () => {
    while (!stopped && started < limit) {
      started++;
      if (!(await createOrder(instance))) started--;
      if (instance.apiFailures > 1000) throw new Error(`${instance.name}: more than 1000 failed POST /api/orders`);
    }
  };
  const done = Promise.all(Array.from({ length: connections }, worker)).then(() => undefined);
  return {
    done,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

/**
 * After a scenario: waits (at most DRAIN_TIMEOUT_MS) for the deliveries still owed, closes the instance
 * (attempts in flight finish and are recorded) and compares the receiver with the database: every
 * delivery the database calls succeeded must have arrived and verified, none may have failed, and with
 * every order's deliveries either succeeded or still pending nothing was lost.
 */
async function settle(
  instance: Instance,
  server: Server,
  receiver: Receiver,
): Promise<{
  stats: GroupStats | undefined;
  states: Record<string, number>;
  drainSeconds: number | undefined;
  unexpected: number;
  check: string;
}> {
  const expected = instance.orders * ENDPOINTS;
  const started = performance.now();
  const drained = await drain(receiver, instance.name, expected);
  const drainSeconds = (drained?.verified ?? 0) >= expected ? (performance.now() - started) / 1000 : undefined;
  const { states, dispatched } = (await ask(
    server,
    { type: 'stop-instance', instance: instance.name },
    'instance-stopped',
  )) as Extract<WebhookServerMessage, { type: 'instance-stopped' }>;
  const stats = (await receiverStats(receiver)).groups[instance.name];
  const verified = stats?.verified ?? 0;
  const unique = verified - (stats?.duplicates ?? 0);
  const succeeded = states.succeeded ?? 0;
  const pending = states.pending ?? 0;
  const failed = states.failed ?? 0;
  const problems: string[] = [];
  if (unique !== succeeded)
    problems.push(`${int(unique)} verified at the receiver but ${int(succeeded)} succeeded in the database`);
  if (succeeded + pending + failed !== expected)
    problems.push(`${int(succeeded + pending + failed)} deliveries for ${int(instance.orders)} orders × ${ENDPOINTS}`);
  if (failed > 0) problems.push(`${failed} failed`);
  if (stats?.rejected) problems.push(`${stats.rejected} rejected by the receiver`);
  if (instance.apiFailures > 0) problems.push(`${instance.apiFailures} POST /api/orders failed`);
  const note = [
    stats?.duplicates ? `${stats.duplicates} duplicates` : '',
    pending > 0 ? `${int(pending)} still pending ${DRAIN_TIMEOUT_MS / 1000} s after the load` : '',
    handedOver(dispatched),
  ]
    .filter(Boolean)
    .join(', ');
  if (problems.length > 0)
    return {
      stats,
      states,
      drainSeconds,
      unexpected: problems.length,
      check: `!! ${problems.join('; ')}${note ? `; ${note}` : ''}`,
    };
  return {
    stats,
    states,
    drainSeconds,
    unexpected: 0,
    check: `${int(verified)} verified${note ? `, ${note}` : ', none lost'}`,
  };
}

/** How the dispatcher got its deliveries: handed over by the outbox in its process (no claim), or claimed. */
function handedOver(dispatched: DispatcherStats | undefined): string {
  const total = dispatched ? dispatched.claimed + dispatched.handedOff : 0;
  if (!dispatched || total === 0) return '';
  return `${Math.round((dispatched.handedOff / total) * 100)}% handed over without a claim`;
}

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const labelOf = (id: string) => id.replace(/[^a-z0-9-]+/gi, '_');
const bodyBytes = (stats: GroupStats | undefined) => (stats && stats.verified > 0 ? stats.bytes / stats.verified : NaN);

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

async function measureLive(
  instance: Instance,
  server: Server,
  receiver: Receiver,
  id: string,
  options: WebhooksBenchOptions,
): Promise<WebhookRow> {
  const loop = closedLoop(instance, ORDER_CONNECTIONS);
  await sleep(options.warmupSeconds * 1000);
  const before = await receiverStats(receiver);
  const ordersBefore = instance.orders;
  const window = await openWindow(receiver, server, labelOf(id));
  await sleep(options.seconds * 1000);
  const cpu = await closeWindow(receiver, server, window);
  const after = await receiverStats(receiver);
  const orders = instance.orders - ordersBefore;
  await loop.stop();
  const backlog = instance.orders * ENDPOINTS - verifiedIn(after, instance.name);
  const delivered = verifiedIn(after, instance.name) - verifiedIn(before, instance.name);
  writeProfileMeta(cpu, id, delivered, orders);
  const settled = await settle(instance, server, receiver);
  const seconds = (after.at - before.at) / 1000;
  return {
    id,
    label: `orders via API (${ORDER_CONNECTIONS} clients, closed loop) → deliveries`,
    dialect: instance.dialect,
    kind: 'live',
    deliveriesPerSecond: delivered / seconds,
    ordersPerSecond: orders / seconds,
    deliveries: delivered,
    ...noLatency,
    ...cpuColumns(cpu, delivered),
    bodyBytes: bodyBytes(settled.stats),
    backlogAtEnd: backlog,
    drainSeconds: settled.drainSeconds,
    unexpected: settled.unexpected,
    check: settled.check,
  };
}

async function measureLatency(
  instance: Instance,
  server: Server,
  receiver: Receiver,
  id: string,
  options: WebhooksBenchOptions,
): Promise<WebhookRow> {
  const interval = 1000 / RATE;
  const warmupCount = Math.round(options.warmupSeconds * RATE);
  const total = warmupCount + Math.round(options.seconds * RATE);
  await receiver.request({ type: 'record', group: instance.name, on: true }, 'recording');
  const orders = new Map<number, Created & { index: number }>();
  const pending: Promise<void>[] = [];
  let window: CpuWindow | undefined;
  let before: Awaited<ReturnType<typeof receiverStats>> | undefined;
  const start = wallClock() + 20;
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - wallClock();
    if (wait > 0.5) await sleep(wait);
    if (i === warmupCount) {
      before = await receiverStats(receiver);
      window = await openWindow(receiver, server, labelOf(id));
    }
    // Open loop: sent on schedule whether or not earlier requests have been answered.
    pending.push(
      createOrder(instance).then((created) => {
        if (created) orders.set(created.id, { ...created, sentAt: due, index: i });
      }),
    );
  }
  await Promise.all(pending);
  const cpu = await closeWindow(receiver, server, window!);
  const after = await receiverStats(receiver);
  const settled = await settle(instance, server, receiver);
  const samples = (
    (await receiver.request({ type: 'samples', group: instance.name }, 'samples')) as Extract<
      ReceiverMessage,
      { type: 'samples' }
    >
  ).samples as LatencySample[];
  const fromOccurred: number[] = [];
  const fromCommit: number[] = [];
  const api: number[] = [];
  for (const order of orders.values()) if (order.index >= warmupCount) api.push(order.respondedAt - order.sentAt);
  const received = new Map<number, number>();
  for (const [orderId, occurredAt, receivedAt] of samples) {
    const order = orders.get(orderId);
    if (!order || order.index < warmupCount) continue;
    received.set(orderId, (received.get(orderId) ?? 0) + 1);
    fromOccurred.push(receivedAt - occurredAt);
    fromCommit.push(receivedAt - order.respondedAt);
  }
  // Deliveries that had not arrived when the run stopped waiting count as slower than any that did.
  const owed = api.length * ENDPOINTS - fromOccurred.length;
  for (let i = 0; i < owed; i++) {
    fromOccurred.push(Infinity);
    fromCommit.push(Infinity);
  }
  for (const list of [fromOccurred, fromCommit, api]) list.sort((a, b) => a - b);
  const delivered = verifiedIn(after, instance.name) - verifiedIn(before!, instance.name);
  writeProfileMeta(cpu, id, delivered, api.length);
  return {
    id,
    label: `${RATE} events/s steady (open loop) → deliveries`,
    dialect: instance.dialect,
    kind: 'latency',
    deliveriesPerSecond: delivered / ((after.at - before!.at) / 1000),
    ordersPerSecond: api.length / cpu.seconds,
    deliveries: delivered,
    p50: quantile(fromOccurred, 0.5),
    p99: quantile(fromOccurred, 0.99),
    max: fromOccurred.at(-1) ?? NaN,
    commitP50: quantile(fromCommit, 0.5),
    commitP99: quantile(fromCommit, 0.99),
    apiP50: quantile(api, 0.5),
    apiP99: quantile(api, 0.99),
    ...cpuColumns(cpu, delivered),
    bodyBytes: bodyBytes(settled.stats),
    unexpected: settled.unexpected,
    check: owed > 0 ? `${settled.check}; ${owed} of the window's deliveries counted as ∞` : settled.check,
  };
}

async function measureBacklog(
  instance: Instance,
  server: Server,
  receiver: Receiver,
  id: string,
  options: WebhooksBenchOptions,
): Promise<WebhookRow> {
  const target = setting('BENCH_WEBHOOKS_BACKLOG_ORDERS', 750 * options.seconds);
  // Fill the outbox: WEBHOOK_DISPATCHER=false, so nothing is sent yet.
  const fillStarted = performance.now();
  await closedLoop(instance, ORDER_CONNECTIONS, target).done;
  const fillSeconds = (performance.now() - fillStarted) / 1000;
  if (verifiedIn(await receiverStats(receiver), instance.name) !== 0)
    throw new Error(`${id}: deliveries arrived before the dispatcher started`);
  const window = await openWindow(receiver, server, labelOf(id));
  await ask(server, { type: 'start-dispatcher', instance: instance.name }, 'dispatcher-started');
  // Measured: BENCH_SECONDS from the first receipt, or until the backlog is gone if that is sooner.
  const expected = instance.orders * ENDPOINTS;
  let stats: GroupStats | undefined;
  const deadline = performance.now() + options.seconds * 1000 + DRAIN_TIMEOUT_MS;
  for (;;) {
    stats = (await receiverStats(receiver)).groups[instance.name];
    const receiving = stats && stats.verified > 0 ? wallClock() - stats.firstAt : 0;
    if ((stats?.verified ?? 0) >= expected || receiving >= options.seconds * 1000 || performance.now() > deadline)
      break;
    await sleep(20);
  }
  const cpu = await closeWindow(receiver, server, window);
  const delivered = stats?.verified ?? 0;
  writeProfileMeta(cpu, id, delivered, instance.orders);
  const settled = await settle(instance, server, receiver);
  // From the first receipt to the last: the dispatcher's start-up (a connection, LISTEN) is not in it.
  const seconds = stats ? (stats.lastAt - stats.firstAt) / 1000 : NaN;
  return {
    id,
    label: `backlog drain: ${int(instance.orders)} orders queued, then a dispatcher started`,
    dialect: instance.dialect,
    kind: 'backlog',
    deliveriesPerSecond: delivered > 1 ? (delivered - 1) / seconds : NaN,
    ordersPerSecond: instance.orders / fillSeconds,
    deliveries: delivered,
    ...noLatency,
    ...cpuColumns(cpu, delivered),
    bodyBytes: bodyBytes(settled.stats),
    unexpected: settled.unexpected,
    check: settled.check,
  };
}

function printRow(row: WebhookRow): void {
  const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '∞');
  const latency =
    row.kind === 'latency'
      ? `  p50 ${ms(row.p50)} ms  p99 ${ms(row.p99)} ms  max ${ms(row.max)} ms (after the 201: p50 ${ms(row.commitP50)}, p99 ${ms(row.commitP99)}; API p50 ${ms(row.apiP50)}, p99 ${ms(row.apiP99)})`
      : '';
  console.log(
    `${int(row.deliveriesPerSecond).padStart(7)} deliveries/s  ${int(row.ordersPerSecond).padStart(6)} orders/s${latency}  Signet ${row.serverCpuUsPerDelivery.toFixed(0)} µs CPU/delivery, ` +
      `${row.serverCores.toFixed(2)} cores (ELU ${(row.serverElu * 100).toFixed(0)}%), receiver ${row.receiverCores.toFixed(2)}, load ${row.clientCores.toFixed(2)}, other ${row.otherCores.toFixed(2)}` +
      `${row.backlogAtEnd ? `  backlog at the end ${int(row.backlogAtEnd)}${row.drainSeconds !== undefined ? ` (gone ${row.drainSeconds.toFixed(1)} s later)` : ''}` : ''}  ${row.check}`,
  );
}

// ---------------------------------------------------------------------------------------------

const KINDS = ['latency', 'live', 'backlog'] as const;
type ScenarioSpec = WebhookInstanceSpec & { id: string; kind: (typeof KINDS)[number] };

export async function runWebhooksBench(options: WebhooksBenchOptions): Promise<number> {
  const dialects = options.postgresUrl ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
  const wanted = (id: string) => !options.only || options.only.has(id);
  const specs: ScenarioSpec[] = [];
  for (const dialect of dialects) {
    for (const kind of KINDS) {
      const id = `webhooks:${dialect}:${kind}`;
      const env = { WEBHOOK_CONCURRENCY: String(CONCURRENCY) };
      if (wanted(id))
        specs.push({ id, kind, name: `${dialect}-${kind}`, dialect, dispatcher: kind !== 'backlog', env });
      // Diagnostic, only when named: SQLite's relaxed durability, to show what the per-commit fsync costs.
      if (dialect === 'sqlite' && options.only?.has(`${id}-sync-normal`)) {
        specs.push({
          id: `${id}-sync-normal`,
          kind,
          name: `${dialect}-${kind}-normal`,
          dialect,
          dispatcher: kind !== 'backlog',
          env: { ...env, SQLITE_SYNCHRONOUS: 'NORMAL' },
        });
      }
    }
  }
  const machine = machineInfo();
  console.log(
    `Signet webhooks benchmark — ${machine.cpus} × ${machine.model}, ${machine.memory}, Node ${machine.node}`,
  );
  console.log(
    `${options.seconds} s per scenario after ${options.warmupSeconds} s warm-up; ${ENDPOINTS} endpoints per order; WEBHOOK_CONCURRENCY ${CONCURRENCY}, ` +
      `WEBHOOK_ENDPOINT_CONCURRENCY ${DEFAULTS.webhookEndpointConcurrency} (${IN_FLIGHT} in flight at most); live: ${ORDER_CONNECTIONS} API clients; latency: ${RATE} events/s${options.profileDir ? `; profiling into ${options.profileDir}` : ''}\n`,
  );

  if (options.profileDir) mkdirSync(options.profileDir, { recursive: true });
  const issuer = await createBenchIssuer();
  const receiverChild = await forkBenchChild<ReceiverMessage, ReceiverRequest>(
    join(here, 'webhooks-receiver.ts'),
    { BENCH_PROFILE_DIR: '' },
    'webhook receiver',
  );
  const receiver: Receiver = { ...receiverChild, url: (receiverChild.ready as { url: string }).url };
  const token = await issuer.token('ES256', SCOPES);
  let exitCode: number;
  try {
    const rows: WebhookRow[] = [
      await measureBaseline(receiver, 'baseline', 'bare undici POST loop → receiver', options),
    ];
    for (const spec of specs) {
      process.stdout.write(`  ${spec.id.padEnd(28)} `);
      const row = await runScenario(spec, receiver, issuer.jwksFile, token, options);
      if (spec.id.endsWith('-sync-normal'))
        Object.assign(row, { label: `${row.label}, SQLITE_SYNCHRONOUS=NORMAL`, diagnostic: true });
      printRow(row);
      rows.push(row);
    }
    if (wanted('baseline-end'))
      rows.push(await measureBaseline(receiver, 'baseline-end', 'the same again (drift check)', options));
    console.log(`\n${formatWebhooksTable(rows)}`);
    const settings: WebhookSettings = {
      seconds: options.seconds,
      warmupSeconds: options.warmupSeconds,
      endpoints: ENDPOINTS,
      orderConnections: ORDER_CONNECTIONS,
      rate: RATE,
      concurrency: CONCURRENCY,
      endpointConcurrency: DEFAULTS.webhookEndpointConcurrency,
    };
    exitCode = finishRun({
      failed: rows.some((r) => r.unexpected > 0),
      failure: 'some deliveries or requests failed',
      docsFile: options.docsFile,
      write: options.writeDocs
        ? (file) => updateWebhooksDocs(file, { rows, targets: WEBHOOK_TARGETS, machine, settings, date: new Date() })
        : undefined,
      profileDir: options.profileDir,
    });
  } catch (err) {
    console.error(err);
    exitCode = 1;
  } finally {
    await receiver.stop();
    issuer.cleanup();
  }
  return exitCode;
}

/**
 * One scenario in a Signet process of its own (fresh database, fresh heap), so that a stuck process
 * fails its scenario only, and nothing one scenario leaves behind competes with the next.
 */
async function runScenario(
  spec: ScenarioSpec,
  receiver: Receiver,
  jwksFile: string,
  token: string,
  options: WebhooksBenchOptions,
): Promise<WebhookRow> {
  const server = await forkBenchChild<WebhookServerMessage, WebhookServerRequest>(
    join(here, 'webhooks-server.ts'),
    {
      BENCH_JWKS_FILE: jwksFile,
      BENCH_WEBHOOK_INSTANCES: JSON.stringify([spec]),
      BENCH_POSTGRES_URL: options.postgresUrl ?? '',
      BENCH_PROFILE_DIR: options.profileDir ?? '',
    },
    'webhooks server process',
    20_000,
  );
  const ready = server.ready as Extract<WebhookServerMessage, { type: 'ready' }>;
  const pool = new Pool(`http://127.0.0.1:${ready.instances[spec.name]}`, {
    connections: 64,
    keepAliveTimeout: 30_000,
    headersTimeout: ANSWER_TIMEOUT_MS,
    bodyTimeout: ANSWER_TIMEOUT_MS,
  });
  const instance: Instance = { name: spec.name, dialect: spec.dialect, pool, token, orders: 0, apiFailures: 0 };
  try {
    await registerEndpoints(instance, receiver);
    const measure = spec.kind === 'latency' ? measureLatency : spec.kind === 'live' ? measureLive : measureBacklog;
    return await measure(instance, server, receiver, spec.id, options);
  } catch (err) {
    const message = (err as Error).message;
    console.error(
      `\n  ${spec.id}: ${message}${message.includes('did not answer') ? `\n  (its database ${ready.databases[spec.name]} may be left behind)` : ''}`,
    );
    return failedRow(spec, message);
  } finally {
    await pool.destroy().catch(() => undefined);
    await server.stop();
  }
}

function failedRow(spec: ScenarioSpec, message: string): WebhookRow {
  return {
    id: spec.id,
    label:
      spec.kind === 'latency'
        ? `${RATE} events/s steady (open loop) → deliveries`
        : spec.kind === 'live'
          ? `orders via API (${ORDER_CONNECTIONS} clients, closed loop) → deliveries`
          : 'backlog drain',
    dialect: spec.dialect,
    kind: spec.kind,
    deliveriesPerSecond: 0,
    ordersPerSecond: NaN,
    deliveries: 0,
    ...noLatency,
    ...(spec.kind === 'latency' ? { p50: Infinity, p99: Infinity, max: Infinity } : {}),
    serverCpuUsPerDelivery: NaN,
    serverCores: NaN,
    receiverCores: NaN,
    clientCores: NaN,
    otherCores: NaN,
    serverElu: NaN,
    bodyBytes: NaN,
    unexpected: 1,
    check: `!! ${message.slice(0, 160)}`,
  };
}
