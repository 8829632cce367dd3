// Output of a benchmark run: the console table and docs/benchmarks.md (the generated sections between
// the bench:… markers are replaced or extended; everything else in the file is left as written).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, release, totalmem } from 'node:os';

export interface Row {
  id: string;
  label: string;
  dialect: string;
  kind: string;
  expectStatus: number;
  /** Average requests per second over the measured window (autocannon's per-second samples). */
  rps: number;
  p50: number;
  p99: number;
  total: number;
  unexpected: number;
  statusCodes: Record<string, number>;
  /** User + system CPU time of the server process per request served in the window. */
  serverCpuUsPerRequest: number;
  /** Event-loop utilisation of the server process in the window (1 = never idle). */
  serverElu: number;
}

export interface Machine {
  cpus: number;
  model: string;
  memory: string;
  node: string;
  os: string;
}

export interface Settings {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  pipelining: number;
}

export function machineInfo(): Machine {
  let model = 'unknown CPU';
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? model;
  } catch {
    // not Linux
  }
  return {
    cpus: availableParallelism(),
    model,
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    os: `Linux ${release()}`,
  };
}

/**
 * Busy CPU time of the whole machine (all processes, /proc/stat) in core-seconds, so that a window can
 * say how much of the 2 cores something other than the benchmark took. NaN off Linux.
 */
export function machineBusySeconds(): number {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
    return (user + nice + system + irq + softirq + steal) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/**
 * Every bench measures its baseline first and last; the higher of the two is the baseline, so a
 * baseline depressed by outside load can never make Signet's ratios look better than they are.
 */
export function baselineRate(rates: number[]): number | undefined {
  return rates.length > 0 ? Math.max(...rates) : undefined;
}

function baselineOf(rows: Row[]): number | undefined {
  return baselineRate(rows.filter((r) => r.id === 'bare' || r.id === 'bare-end').map((r) => r.rps));
}

function ratio(row: Row, bare: number | undefined): number | undefined {
  return bare ? row.rps / bare : undefined;
}

/** A row's target: `dialect:kind` first (PostgreSQL creates have their own, docs/benchmarks.md), then its kind's. */
export function targetOf(row: Row, targets: Record<string, number>): number | undefined {
  return targets[`${row.dialect}:${row.kind}`] ?? targets[row.kind];
}

function targetCell(row: Row, bare: number | undefined, targets: Record<string, number>): string {
  const target = targetOf(row, targets);
  if (target === undefined) return '';
  const r = ratio(row, bare);
  if (r === undefined) return `≥ ${target}×`;
  return `≥ ${target}× ${r >= target ? '✅ met' : '❌ MISSED'}`;
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');

function tableRows(rows: Row[], targets: Record<string, number>): string[][] {
  const bare = baselineOf(rows);
  return rows.map((row) => {
    const r = ratio(row, bare);
    return [
      row.label,
      row.dialect,
      int(row.rps),
      row.p50.toFixed(1),
      row.p99.toFixed(1),
      r === undefined ? '' : `${r.toFixed(2)}×`,
      targetCell(row, bare, targets),
      Number.isFinite(row.serverCpuUsPerRequest) ? row.serverCpuUsPerRequest.toFixed(0) : '',
      `${(row.serverElu * 100).toFixed(0)}%`,
      row.unexpected === 0
        ? `all ${row.expectStatus}`
        : `!! ${row.unexpected} not ${row.expectStatus}: ${JSON.stringify(row.statusCodes)}`,
    ];
  });
}

const HEADER = [
  'Scenario',
  'DB',
  'req/s (avg)',
  'p50 ms',
  'p99 ms',
  '× bare',
  'Target',
  'server CPU µs/req',
  'server ELU',
  'Responses',
];

/** A plain-text table for the terminal: columns padded, those in `right` aligned right. */
export function textTable(header: readonly string[], body: string[][], right: (column: number) => boolean): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (right(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** The same table in Markdown, for docs/benchmarks.md. */
export function markdownGrid(header: readonly string[], body: string[][], right: (column: number) => boolean): string {
  const align = header.map((_, i) => (right(i) ? '---:' : '---'));
  return [header, align, ...body].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

const numericColumn = (i: number) => (i >= 2 && i <= 5) || i === 7;

export function formatTable(rows: Row[], targets: Record<string, number>): string {
  return textTable(HEADER, tableRows(rows, targets), numericColumn);
}

function markdownTable(rows: Row[], targets: Record<string, number>): string {
  return markdownGrid(HEADER, tableRows(rows, targets), numericColumn);
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

/** Short HEAD, marked when src/ has uncommitted changes (the numbers would not match the revision). */
export function revision(): string {
  const head = git(['rev-parse', '--short', 'HEAD']) || 'unknown';
  return git(['status', '--porcelain', '--', 'src']) ? `${head} + uncommitted src/ changes` : head;
}

const HISTORY_HEADER =
  '| Date | Revision | DB | s/scenario | bare req/s | GET × | 304 × | POST × | GET RS256/ES256 | Targets |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|';

const TEMPLATE = `# Benchmarks

Throughput of the Signet API compared with a bare Fastify 5 route on the same machine, in the same run.
The targets are relative, so that they mean the same on a laptop and in CI:

| Request | Target |
|---|---|
| authenticated \`GET /api/orders/{id}\` | ≥ 0.5 × bare |
| the same with \`If-None-Match\` of the current ETag (304) | ≥ 0.5 × bare |
| \`POST /api/orders\` with a fresh \`Idempotency-Key\` | ≥ 0.25 × bare (SQLite, FULL), ≥ 0.10 × bare (PostgreSQL) |

## Running

\`\`\`sh
npm run bench                                   # 10 s per scenario after a 2 s warm-up, 50 connections
BENCH_SECONDS=3 npm run bench                   # quick run
BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench   # also on PostgreSQL (fresh schema, dropped after)
BENCH_PROFILE=1 BENCH_SCENARIOS=sqlite:get npm run bench   # CPU profile of the measured window(s)
npx node bench/lib/profile-summary.ts bench/profiles/<run>     # top functions, µs per request
\`\`\`

A full run (no \`BENCH_SCENARIOS\`, no profiling) rewrites the "Latest run" section below and appends a line to
"History"; the rest of this file is not touched. \`BENCH_DOCS=0\`/\`1\` overrides that.

How it measures: \`bench/api/server.ts\` runs, in a child process, a bare Fastify app (\`GET /bare\` → a small JSON
object) and the real app from \`buildApp(loadConfig(…))\` with a temporary SQLite file, \`LOG_LEVEL=silent\`,
\`RATE_LIMIT_MAX=100000000\` and a local JWKS holding an ES256 and an RS256 key; a second Signet instance has
\`AUTH_TOKEN_CACHE_SIZE=0\` to show what the token cache saves. \`bench/run.ts\` drives them with autocannon
(pipelining 1) from the parent process, so client and server never share an event loop. Every response's
status is checked. Besides req/s and latency the server process reports its own CPU time per request (a
client-independent cost) and its event-loop utilisation (ELU near 100 % = the server, not the client, is the
bottleneck). On a 2-core machine the load generator takes one core, the server the other, and a PostgreSQL
server competes with both.

<!-- bench:latest:start -->
<!-- bench:latest:end -->

## History

<!-- bench:history:start -->
${HISTORY_HEADER}
<!-- bench:history:end -->
`;

export interface Report {
  rows: Row[];
  targets: Record<string, number>;
  machine: Machine;
  settings: Settings;
  date: Date;
}

function historyLines(report: Report, rev: string): string[] {
  const bare = baselineOf(report.rows);
  const dialects = [...new Set(report.rows.map((r) => r.dialect).filter((d) => d !== '-'))];
  return dialects.map((dialect) => {
    const of = (kind: string) => report.rows.find((r) => r.dialect === dialect && r.kind === kind);
    const x = (kind: string) => {
      const row = of(kind);
      const r = row && ratio(row, bare);
      return r === undefined ? '' : r.toFixed(2);
    };
    const es = of('get');
    const rs = of('get-rs256');
    const met = Object.entries(report.targets).map(([kind, target]) => {
      const row = of(kind);
      const r = row && ratio(row, bare);
      return r === undefined ? undefined : r >= target;
    });
    const verdict = met.every((m) => m === true) ? 'all met' : `${met.filter((m) => m === false).length} missed`;
    return `| ${report.date.toISOString().slice(0, 16).replace('T', ' ')} | ${rev} | ${dialect} | ${report.settings.seconds} | ${bare ? int(bare) : ''} | ${x('get')} | ${x('get-304')} | ${x('post')} | ${es && rs ? (rs.rps / es.rps).toFixed(2) : ''} | ${verdict} |`;
  });
}

function latestSection(report: Report, rev: string): string {
  const { machine, settings } = report;
  const bare = baselineOf(report.rows);
  const missed = report.rows.filter((r) => {
    const target = targetOf(r, report.targets);
    return target !== undefined && bare && r.rps / bare < target;
  });
  const find = (id: string) => report.rows.find((r) => r.id === id);
  const pairs: string[] = [];
  for (const [a, b, what] of [
    ['sqlite:get', 'sqlite:get-rs256', 'with the token cache'],
    ['sqlite:get-nocache', 'sqlite:get-nocache-rs256', 'with the cache off'],
  ] as const) {
    const es = find(a);
    const rs = find(b);
    if (es && rs)
      pairs.push(
        `${what}: RS256 ${int(rs.rps)} vs ES256 ${int(es.rps)} req/s (${(rs.rps / es.rps).toFixed(2)}×), ${rs.serverCpuUsPerRequest.toFixed(0)} vs ${es.serverCpuUsPerRequest.toFixed(0)} µs CPU/req`,
      );
  }
  const cached = find('sqlite:get');
  const uncached = find('sqlite:get-nocache');
  return [
    '## Latest run',
    '',
    `- Date: ${report.date.toISOString().replace(/\.\d+Z$/, 'Z')}; revision ${rev}`,
    `- Machine: ${machine.cpus} CPUs (\`nproc\`), ${machine.model}, ${machine.memory} RAM, ${machine.os}; Node ${machine.node}`,
    `- Load: autocannon, ${settings.connections} connections, pipelining ${settings.pipelining}, ${settings.seconds} s per scenario after ${settings.warmupSeconds} s warm-up`,
    `- Targets: ${missed.length === 0 ? '**all met**' : `**${missed.length} missed** (${missed.map((r) => `${r.dialect} ${r.kind}`).join(', ')})`}`,
    '',
    markdownTable(report.rows, report.targets),
    '',
    ...(pairs.length > 0 ? ['Token algorithm:', '', ...pairs.map((p) => `- ${p}`), ''] : []),
    ...(cached && uncached
      ? [`Token cache: ${int(cached.rps)} req/s with it, ${int(uncached.rps)} without (ES256, SQLite).`, '']
      : []),
  ].join('\n');
}

export interface DocsMarkers {
  /** `auth` for `<!-- bench:auth:latest:start -->`…; empty for the API suite's `<!-- bench:latest:start -->`. */
  suite: string;
  /** Appended when the file lacks the "Latest run" markers (e.g. `\n## Webhooks\n\n`). */
  latestHeading: string;
  /** Appended with the history table when the file lacks its markers. */
  historyHeading: string;
  historyHeader: string;
}

/** Replaces a suite's "Latest run" section and appends its lines to the history table. */
export function writeDocsSections(
  file: string,
  markers: DocsMarkers,
  render: (rev: string) => { latest: string; history: string },
  template = '# Benchmarks\n',
): void {
  const tag = (part: string) => `<!-- bench:${markers.suite ? `${markers.suite}:` : ''}${part} -->`;
  const [latestStart, latestEnd, historyStart, historyEnd] = [
    tag('latest:start'),
    tag('latest:end'),
    tag('history:start'),
    tag('history:end'),
  ];
  let text = existsSync(file) ? readFileSync(file, 'utf8') : template;
  if (!text.includes(latestStart) || !text.includes(latestEnd))
    text += `${markers.latestHeading}${latestStart}\n${latestEnd}\n`;
  if (!text.includes(historyStart) || !text.includes(historyEnd))
    text += `${markers.historyHeading}${historyStart}\n${markers.historyHeader}\n${historyEnd}\n`;
  const { latest, history } = render(revision());
  const start = text.indexOf(latestStart) + latestStart.length;
  text = `${text.slice(0, start)}\n${latest}\n${text.slice(text.indexOf(latestEnd))}`;
  const end = text.indexOf(historyEnd);
  text = `${text.slice(0, end)}${history}\n${text.slice(end)}`;
  writeFileSync(file, text);
}

export function updateDocs(file: string, report: Report): void {
  const markers = { suite: '', latestHeading: '\n', historyHeading: '\n## History\n\n', historyHeader: HISTORY_HEADER };
  writeDocsSections(
    file,
    markers,
    (rev) => ({ latest: latestSection(report, rev), history: historyLines(report, rev).join('\n') }),
    TEMPLATE,
  );
}

/**
 * The end of every benchmark run: failed requests make the exit code 1, the docs are rewritten when
 * asked (`write` given), and profiles, when taken, are pointed at. Returns the exit code.
 */
export function finishRun(run: {
  failed: boolean;
  failure: string;
  docsFile: string;
  write: ((file: string) => void) | undefined;
  profileDir: string | undefined;
}): number {
  if (run.failed) console.error(`\n${run.failure}: see the "!!" lines above`);
  if (run.write) {
    run.write(run.docsFile);
    console.log(`\nwrote ${run.docsFile}`);
  }
  if (run.profileDir)
    console.log(`\nprofiles: ${run.profileDir}\nsummarise: npx node bench/lib/profile-summary.ts ${run.profileDir}`);
  return run.failed ? 1 : 0;
}
