// The operators' delivery log and event browser at scale (docs/guides/admin-api.md): 10,000 endpoints
// (50 per client), 500,000 events and 1,000,000 deliveries generated in SQL, then every list filter timed
// through the admin service and its query plan printed (EXPLAIN QUERY PLAN / EXPLAIN ANALYZE).
//
//   npx node bench/api/admin-log.ts                                          SQLite (a temporary file)
//   BENCH_DIALECT=postgres BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres \
//     npx node bench/api/admin-log.ts                                        PostgreSQL (a temporary schema)
// Environment: BENCH_EVENTS (500000; two deliveries each), BENCH_CALLS (20 per query), BENCH_PLANS=1. The API timings
// of record for these lists are in docs/benchmarks-history.md, "Console at scale" (bench/scale/console-scale.ts).
import { CompiledQuery, type KyselyPlugin } from 'kysely';
import { openDatabase, type Db } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createAdminDeliveriesService } from '../../src/webhooks/admin/admin-deliveries.service.ts';
import type { Outbox } from '../../src/webhooks/outbox/events.outbox.ts';
import { createBenchDatabase, type BenchDialect } from '../lib/databases.ts';

const DIALECT = (process.env.BENCH_DIALECT ?? 'sqlite') as BenchDialect;
const EVENTS = Number(process.env.BENCH_EVENTS ?? 500_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 20);
const PLANS = process.env.BENCH_PLANS === '1';
const START = Date.parse('2026-10-01T00:00:00Z');
const SPAN_S = 30 * 86_400; // the events spread over 30 days
const pg = DIALECT === 'postgres';

/** Type shares in percent (n % 100): mostly order events, 2 % pings, no endpoint.disabled at all. */
const TYPE_CASE = `case
  when n % 100 < 30 then 'order.created' when n % 100 < 40 then 'order.updated'
  when n % 100 < 60 then 'order.paid' when n % 100 < 75 then 'order.shipped'
  when n % 100 < 90 then 'order.delivered' when n % 100 < 98 then 'order.cancelled'
  else 'webhook.ping' end`;

function seedSql(): string[] {
  const hex = (v: string) => (pg ? `lpad(to_hex(${v}), 32, '0')` : `printf('%032x', ${v})`);
  const at = (seconds: string) =>
    pg
      ? `timestamptz '2026-10-01T00:00:00Z' + (${seconds}) * interval '1 second'`
      : `strftime('%Y-%m-%dT%H:%M:%fZ', ${START / 1000} + (${seconds}), 'unixepoch')`;
  const series = (count: number, body: string) =>
    pg
      ? body.replace('FROM_SERIES', `from generate_series(0::bigint, ${count - 1}) as s(n)`)
      : `with recursive s(n) as (select 0 union all select n + 1 from s where n < ${count - 1}) ${body.replace('FROM_SERIES', 'from s')}`;
  const div = pg ? 'div' : '';
  const intdiv = (a: string, b: number) => (pg ? `${div}(${a}, ${b})` : `(${a}) / ${b}`);
  const every = `${SPAN_S / EVENTS}`;
  // Endpoint 0 (client-0000) takes one delivery in ten: a hot endpoint; the rest spread over all.
  const endpointOf = (d: number) =>
    d === 0 ? `case when n % 10 = 0 then 0 else (n * 7919) % 10000 end` : `(n * 7919 + 4729) % 10000`;
  const state = (d: number) => `case
      when ((n * 2 + ${d}) * 2654435761) % 1000 < 10 then 'pending'
      when ((n * 2 + ${d}) * 2654435761) % 1000 < 30 then 'failed' else 'succeeded' end`;
  const deliveries = (d: number) =>
    series(
      EVENTS,
      `insert into webhook_deliveries (id, event_id, endpoint_id, state, attempt_count, retry_index,
         next_attempt_at, lease_owner, lease_until, last_status_code, last_error, created_at, updated_at)
       select 'dlv_' || ${hex(`n * 2 + ${d}`)}, 'evt_' || ${hex('n')}, 'whep_' || ${hex(endpointOf(d))},
         ${state(d)}, 1, 0, ${at(`n * ${every}`)}, null, null, 200, null, ${at(`n * ${every}`)}, ${at(`n * ${every}`)}
       FROM_SERIES`,
    );
  return [
    series(
      10_000,
      `insert into webhook_endpoints (id, owner, url, description, event_types, enabled, disabled_reason, secret,
         previous_secret, previous_secret_expires_at, failing_since, created_at, updated_at)
       select 'whep_' || ${hex('n')}, 'client-' || ${pg ? `lpad((${intdiv('n', 50)})::text, 4, '0')` : `printf('%04d', n / 50)`},
         'https://hooks' || n || '.example.com/', '', '["*"]', 1, null, 'sealed', null, null, null, ${at('n')}, ${at('n')}
       FROM_SERIES`,
    ),
    series(
      EVENTS,
      `insert into webhook_events (id, type, occurred_at, data, owner, customer_id, order_id)
       select 'evt_' || ${hex('n')}, ${TYPE_CASE}, ${at(`n * ${every}`)}, '{"Id":1}',
         case when n % 100 >= 98 then 'client-0000' else null end, null,
         case when n % 100 < 98 then 1 + n % 200000 else null end
       FROM_SERIES`,
    ),
    deliveries(0),
    deliveries(1),
  ];
}

/** Captures the SQL a service call runs, to explain it afterwards. */
function capturing(db: Db, into: CompiledQuery[]): Db {
  const plugin: KyselyPlugin = {
    transformQuery: (args) => (into.push(db.getExecutor().compileQuery(args.node, args.queryId)), args.node),
    transformResult: async (args) => args.result,
  };
  return db.withPlugin(plugin);
}

async function explain(db: Db, query: CompiledQuery): Promise<string> {
  const prefix = pg ? 'explain (analyze, buffers off, costs off, timing off, summary off) ' : 'explain query plan ';
  const result = await db.executeQuery<Record<string, unknown>>(
    CompiledQuery.raw(prefix + query.sql, [...query.parameters]),
  );
  return result.rows.map((r) => String(pg ? r['QUERY PLAN'] : r.detail)).join('\n    ');
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

type Call = (service: ReturnType<typeof createAdminDeliveriesService>) => Promise<unknown>;

async function main(): Promise<void> {
  const database = await createBenchDatabase(DIALECT, process.env.BENCH_POSTGRES_URL);
  const handle = openDatabase(database.url, { statementTimeoutMs: 600_000, sqliteSynchronous: 'NORMAL' });
  try {
    await migrateToLatest(handle);
    const seeded = performance.now();
    for (const statement of seedSql()) await handle.db.executeQuery(CompiledQuery.raw(statement));
    await handle.db.executeQuery(CompiledQuery.raw('analyze'));
    const seedMs = Math.round(performance.now() - seeded);
    const outbox = { announce: async () => {} } as unknown as Outbox;
    const captured: CompiledQuery[] = [];
    const plain = createAdminDeliveriesService({ db: handle.db, outbox });
    const spied = createAdminDeliveriesService({ db: capturing(handle.db, captured), outbox });
    const middle = new Date(START + (SPAN_S * 1000) / 2);
    const deep = { at: middle, key: 'dlv_ffffffffffffffffffffffffffffffff' };
    const day = { since: new Date(START + 86_400_000 * 10), until: new Date(START + 86_400_000 * 11) };
    const cases: [string, Call][] = [
      ['deliveries: first page', (s) => s.list({ limit: 50 })],
      ['deliveries: deep cursor', (s) => s.list({ limit: 50, before: deep })],
      ['deliveries: state=failed', (s) => s.list({ limit: 50, state: 'failed' })],
      ['deliveries: state=pending, deep', (s) => s.list({ limit: 50, state: 'pending', before: deep })],
      ['deliveries: client_id (hot client)', (s) => s.list({ limit: 50, clientId: 'client-0000' })],
      ['deliveries: client_id, deep', (s) => s.list({ limit: 50, clientId: 'client-0100', before: deep })],
      ['deliveries: endpoint_id (hot)', (s) => s.list({ limit: 50, endpointId: `whep_${'0'.repeat(32)}` })],
      ['deliveries: event_type=order.paid', (s) => s.list({ limit: 50, eventType: 'order.paid' })],
      ['deliveries: event_type=webhook.ping', (s) => s.list({ limit: 50, eventType: 'webhook.ping' })],
      [
        'deliveries: event_type with no delivery, one day',
        (s) => s.list({ limit: 50, eventType: 'webhook.endpoint.disabled', ...day }),
      ],
      ['deliveries: one day window', (s) => s.list({ limit: 50, ...day })],
      ['deliveries: client + state=failed', (s) => s.list({ limit: 50, clientId: 'client-0100', state: 'failed' })],
      ['deliveries: event_id', (s) => s.list({ limit: 50, eventId: `evt_${'0'.repeat(31)}7` })],
      ['events: first page', (s) => s.events({ limit: 50 })],
      ['events: deep cursor', (s) => s.events({ limit: 50, before: { at: middle, key: 1e12 } })],
      ['events: type=order.paid', (s) => s.events({ limit: 50, types: ['order.paid'] })],
      [
        'events: type=webhook.ping, deep',
        (s) => s.events({ limit: 50, types: ['webhook.ping'], before: { at: middle, key: 1e12 } }),
      ],
      ['events: order_id', (s) => s.events({ limit: 50, orderId: 12345 })],
      ['events: one day window', (s) => s.events({ limit: 50, ...day })],
    ];
    const results = [];
    for (const [name, call] of cases) {
      await call(plain); // warm
      const times: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        const t = performance.now();
        await call(plain);
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      captured.length = 0;
      await call(spied);
      // The statements run, without the subqueries the capture also sees while they are built.
      const run = captured.filter((q) => !captured.some((other) => other !== q && other.sql.includes(q.sql)));
      const plans = PLANS ? await Promise.all(run.map((q) => explain(handle.db, q))) : [];
      results.push({ name, medianMs: +percentile(times, 0.5).toFixed(2), p95Ms: +percentile(times, 0.95).toFixed(2) });
      if (PLANS) console.error(`\n## ${name}\n    ${plans.join('\n    --\n    ')}`);
    }
    console.log(
      JSON.stringify(
        { dialect: DIALECT, events: EVENTS, deliveries: EVENTS * 2, endpoints: 10_000, seedMs, results },
        null,
        1,
      ),
    );
  } finally {
    await handle.db.destroy();
    await database.drop();
  }
}

await main();
