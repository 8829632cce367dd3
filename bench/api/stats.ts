// The overview's cost on a large data set (GET /api/admin/stats, src/operator/stats.overview.ts): seeds
// BENCH_STATS_DELIVERIES (1,000,000) deliveries spread over BENCH_STATS_SPREAD_HOURS (168) up to now, each
// with one attempt and every fifth with a second, plus 20,000 sign-ins in the audit trail; prints the plan of
// every statement the overview runs (EXPLAIN QUERY PLAN / EXPLAIN ANALYZE) and the time of BENCH_STATS_RUNS
// (5) whole overviews. `npx node bench/api/stats.ts sqlite|postgres` (postgres needs BENCH_POSTGRES_URL).
import { performance } from 'node:perf_hooks';
import { CompiledQuery, sql, type KyselyPlugin, type RootOperationNode } from 'kysely';
import { openDatabase, withoutTimeouts, type Dialect } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { overview } from '../../src/operator/stats.overview.ts';
import { createBenchDatabase } from '../lib/databases.ts';

const dialect = (process.argv[2] ?? 'sqlite') as Dialect;
const N = Number(process.env.BENCH_STATS_DELIVERIES ?? 1_000_000);
const SPREAD_MS = Number(process.env.BENCH_STATS_SPREAD_HOURS ?? 168) * 3_600_000;
const RUNS = Number(process.env.BENCH_STATS_RUNS ?? 5);

/** Seconds since the epoch of row i: evenly spread over the SPREAD_MS before now, newest first. */
function seedSql(now: number) {
  const step = SPREAD_MS / N / 1000;
  const t0 = now / 1000;
  if (dialect === 'postgres') {
    const at = (expr: string) => `to_timestamp(${t0} - (i + 1) * ${step} ${expr})`;
    const series = `from generate_series(0::bigint, ${N - 1}) as i`;
    return [
      `insert into webhook_deliveries select 'dlv_' || i, 'evt_' || i, 'whep_bench',
         case when i % 50 = 0 then 'pending' when i % 50 = 1 then 'failed' else 'succeeded' end, 1, 0,
         ${at('')}, null, null, null, null, ${at('')}, ${at('+ case when i % 50 = 0 then 0 else 2 end')} ${series}`,
      `insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error_kind)
         select 'dlv_' || i, 1, ${at('')}, (i * 7919) % 3000, null,
         case when i % 50 < 2 then 'timeout' when i % 5 = 3 then 'status' end ${series}`,
      `insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error_kind)
         select 'dlv_' || i, 2, ${at('+ 1')}, (i * 104729) % 2000, 200, null ${series} where i % 5 = 3`,
      `insert into audit_log (id, occurred_at, actor_type, actor_id, action, outcome, details)
         select 'aud_' || i, ${at('')}, 'user', 'usr', case when i % 4 = 0 then 'signin.failed' else 'signin.succeeded' end,
         'success', '{}' from generate_series(0::bigint, ${N - 1}, 50) as i`,
      'analyze',
    ];
  }
  const at = (expr: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${t0} - (i + 1) * ${step} ${expr}, 'unixepoch')`;
  const series = `from (with recursive n(i) as (select 0 union all select i + 1 from n where i < ${N - 1}) select i from n)`;
  return [
    `insert into webhook_deliveries select 'dlv_' || i, 'evt_' || i, 'whep_bench',
       case when i % 50 = 0 then 'pending' when i % 50 = 1 then 'failed' else 'succeeded' end, 1, 0,
       ${at('')}, null, null, null, null, ${at('')}, ${at('+ case when i % 50 = 0 then 0 else 2 end')} ${series}`,
    `insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error_kind)
       select 'dlv_' || i, 1, ${at('')}, (i * 7919) % 3000, null,
       case when i % 50 < 2 then 'timeout' when i % 5 = 3 then 'status' end ${series}`,
    `insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error_kind)
       select 'dlv_' || i, 2, ${at('+ 1')}, (i * 104729) % 2000, 200, null ${series} where i % 5 = 3`,
    `insert into audit_log (id, occurred_at, actor_type, actor_id, action, outcome, details)
       select 'aud_' || i, ${at('')}, 'user', 'usr', case when i % 4 = 0 then 'signin.failed' else 'signin.succeeded' end,
       'success', '{}' ${series} where i % 50 = 0`,
    'analyze',
  ];
}

/** Records every statement the overview compiles, to explain them afterwards. */
function capture(nodes: RootOperationNode[]): KyselyPlugin {
  return {
    transformQuery: ({ node }) => (nodes.push(node), node),
    transformResult: async ({ result }) => result,
  };
}

async function main(): Promise<void> {
  const database = await createBenchDatabase(dialect, process.env.BENCH_POSTGRES_URL);
  const handle = openDatabase(database.url);
  try {
    await migrateToLatest(handle);
    const now = Date.now();
    const seeding = performance.now();
    await withoutTimeouts(handle, async (db) => {
      await db
        .insertInto('webhook_endpoints')
        .values({
          id: 'whep_bench',
          owner: 'bench',
          url: 'https://bench.example/',
          description: '',
          event_types: '["*"]',
          enabled: 1,
          disabled_reason: null,
          secret: 'x',
          previous_secret: null,
          previous_secret_expires_at: null,
          failing_since: null,
          created_at: new Date(0).toISOString(),
          updated_at: new Date(0).toISOString(),
        })
        .execute();
      for (const statement of seedSql(now)) await sql.raw(statement).execute(db);
    });
    console.log(`${dialect}: seeded ${N} deliveries in ${((performance.now() - seeding) / 1000).toFixed(1)} s`);

    const window = { since: new Date(now - 24 * 3_600_000), until: new Date(now) };
    const nodes: RootOperationNode[] = [];
    await withoutTimeouts(handle, async (db) => {
      await overview({ db: db.withPlugin(capture(nodes)), dialect }, window, new Date());
      for (const node of nodes) {
        const compiled = db.getExecutor().compileQuery(node, { queryId: 'explain' } as never);
        const explain = dialect === 'postgres' ? 'explain (analyze, costs off)' : 'explain query plan';
        const { rows } = await db.executeQuery(
          CompiledQuery.raw(`${explain} ${compiled.sql}`, [...compiled.parameters]),
        );
        const started = performance.now();
        await db.executeQuery(CompiledQuery.raw(compiled.sql, [...compiled.parameters]));
        const ms = (performance.now() - started).toFixed(0);
        console.log(`\n${compiled.sql.replace(/\s+/g, ' ').slice(0, 160)}… (alone: ${ms} ms)`);
        for (const row of rows as Record<string, unknown>[])
          console.log(`  ${String(row['QUERY PLAN'] ?? row.detail)}`);
      }
      const times: number[] = [];
      let body: Awaited<ReturnType<typeof overview>> | undefined;
      for (let run = 0; run < RUNS; run += 1) {
        const start = performance.now();
        body = await overview({ db, dialect }, window, new Date());
        times.push(performance.now() - start);
      }
      const attempts = body!.Webhooks.Attempts.reduce((n, b) => n + b.Succeeded + b.Failed, 0);
      console.log(
        `\n${dialect}: overview of ${attempts} attempts in 24 h, pending now ${body!.Webhooks.Pending.Count}: ` +
          `${times.map((t) => t.toFixed(0)).join(', ')} ms (median ${times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!.toFixed(0)} ms)`,
      );
    });
  } finally {
    await handle.db.destroy();
    await database.drop();
  }
}

await main();
