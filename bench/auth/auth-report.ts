// Output of the authorization-server benchmark (`npm run bench -- auth`): the console table and the
// generated parts of the "Authorization server" section of docs/benchmarks.md (between the
// bench:auth:… markers; everything else in the file is left as written).
import { baselineRate, markdownGrid, textTable, writeDocsSections, type Machine } from '../lib/report.ts';

export interface AuthRow {
  id: string;
  label: string;
  dialect: string;
  alg: string;
  kind: 'bare' | 'cc' | 'flow';
  unit: string;
  /** Requests, tokens or complete flows per second. */
  rate: number;
  /** HTTP requests per second the server answered in the window (a flow is several). */
  httpRps: number;
  p50: number;
  p99: number;
  ops: number;
  /** Non-200 responses, socket errors and timeouts (client credentials), or failed flows. */
  unexpected: number;
  statusCodes: Record<string, number>;
  /** Server CPU (user + system) per request, token or flow. */
  serverCpuUsPerOp: number;
  /** Server CPU time / wall time in the window (1 = one core busy). */
  serverCpuCores: number;
  /** Load generator CPU time / wall time in the window. */
  clientCpuCores: number;
  /** CPU the rest of the machine used meanwhile (other processes, e.g. a PostgreSQL server), in cores. */
  otherCpuCores: number;
  serverElu: number;
}

export interface AuthSettings {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  pipelining: number;
  flowConcurrency: number;
  requestsPerFlow: number;
}

export interface AuthReport {
  rows: AuthRow[];
  targets: Record<string, { value: number; unit: string }>;
  machine: Machine;
  settings: AuthSettings;
  date: Date;
}

function baselineOf(rows: AuthRow[]): number | undefined {
  return baselineRate(rows.filter((r) => r.kind === 'bare').map((r) => r.rate));
}

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '');
const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '');

function targetCell(row: AuthRow, targets: AuthReport['targets']): string {
  const target = targets[row.kind];
  if (!target) return '';
  return `≥ ${int(target.value)} ${row.rate >= target.value ? '✅ met' : '❌ MISSED'}`;
}

function responsesCell(row: AuthRow): string {
  if (row.unexpected > 0) return `!! ${row.unexpected} failed: ${JSON.stringify(row.statusCodes)}`;
  return row.kind === 'flow' ? `all ${int(row.ops)} flows ok` : 'all 200';
}

const HEADER = [
  'Scenario',
  'DB',
  'rate',
  'unit',
  'p50 ms',
  'p99 ms',
  'HTTP req/s',
  'HTTP × bare',
  'Target',
  'server CPU µs/op',
  'server cores',
  'client cores',
  'other cores',
  'server ELU',
  'Responses',
];
const RIGHT = new Set([2, 4, 5, 6, 7, 9, 10, 11, 12, 13]);

function tableRows(rows: AuthRow[], targets: AuthReport['targets']): string[][] {
  const bare = baselineOf(rows);
  return rows.map((row) => [
    row.label,
    row.dialect,
    int(row.rate),
    row.unit,
    fixed(row.p50, 1),
    fixed(row.p99, 1),
    int(row.httpRps),
    bare ? `${(row.httpRps / bare).toFixed(3)}×` : '',
    targetCell(row, targets),
    int(row.serverCpuUsPerOp),
    fixed(row.serverCpuCores, 2),
    fixed(row.clientCpuCores, 2),
    fixed(row.otherCpuCores, 2),
    `${(row.serverElu * 100).toFixed(0)}%`,
    responsesCell(row),
  ]);
}

export function formatAuthTable(rows: AuthRow[], targets: AuthReport['targets']): string {
  return textTable(HEADER, tableRows(rows, targets), (i) => RIGHT.has(i));
}

function markdownTable(rows: AuthRow[], targets: AuthReport['targets']): string {
  return markdownGrid(HEADER, tableRows(rows, targets), (i) => RIGHT.has(i));
}

const HISTORY_HEADER =
  '| Date | Revision | s/scenario | bare req/s | CC ES256 tokens/s | CC EdDSA | CC RS256 | flows/s | PG CC tokens/s | PG flows/s | Targets |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|';

function missed(report: AuthReport): AuthRow[] {
  return report.rows.filter((r) => report.targets[r.kind] !== undefined && r.rate < report.targets[r.kind]!.value);
}

function latestSection(report: AuthReport, rev: string): string {
  const { machine, settings } = report;
  const misses = missed(report);
  const find = (id: string) => report.rows.find((r) => r.id === id);
  const algs = ['auth:sqlite:cc', 'auth:sqlite:cc-eddsa', 'auth:sqlite:cc-rs256']
    .map(find)
    .filter((r) => r !== undefined);
  const es = find('auth:sqlite:cc');
  return [
    '### Latest run',
    '',
    `- Date: ${report.date.toISOString().replace(/\.\d+Z$/, 'Z')}; revision ${rev}`,
    `- Machine: ${machine.cpus} CPUs (\`nproc\`), ${machine.model}, ${machine.memory} RAM, ${machine.os}; Node ${machine.node}`,
    `- Load: ${settings.seconds} s per scenario after ${settings.warmupSeconds} s warm-up; client credentials and bare route: autocannon, ${settings.connections} connections, pipelining ${settings.pipelining}; flows: ${settings.flowConcurrency} concurrent, ${settings.requestsPerFlow} HTTP requests each`,
    `- Targets: ${misses.length === 0 ? '**all met**' : `**${misses.length} missed** (${misses.map((r) => r.id).join(', ')})`}`,
    '',
    markdownTable(report.rows, report.targets),
    '',
    ...(es && algs.length > 1
      ? [
          'Access-token algorithm (client credentials, SQLite):',
          '',
          ...algs.map(
            (r) =>
              `- ${r.alg}: ${int(r.rate)} tokens/s (${(r.rate / es.rate).toFixed(2)}× ES256), ${int(r.serverCpuUsPerOp)} µs server CPU per token`,
          ),
          '',
        ]
      : []),
  ].join('\n');
}

function historyLine(report: AuthReport, rev: string): string {
  const rate = (id: string) => int(report.rows.find((r) => r.id === id)?.rate ?? NaN);
  const bare = baselineOf(report.rows);
  const misses = missed(report);
  const verdict = misses.length === 0 ? 'all met' : `${misses.length} missed`;
  return `| ${report.date.toISOString().slice(0, 16).replace('T', ' ')} | ${rev} | ${report.settings.seconds} | ${bare ? int(bare) : ''} | ${rate('auth:sqlite:cc')} | ${rate('auth:sqlite:cc-eddsa')} | ${rate('auth:sqlite:cc-rs256')} | ${rate('auth:sqlite:flow')} | ${rate('auth:postgres:cc')} | ${rate('auth:postgres:flow')} | ${verdict} |`;
}

export function updateAuthDocs(file: string, report: AuthReport): void {
  const markers = {
    suite: 'auth',
    latestHeading: '\n## Authorization server\n\n',
    historyHeading: '\n### Authorization-server history\n\n',
    historyHeader: HISTORY_HEADER,
  };
  writeDocsSections(file, markers, (rev) => ({
    latest: latestSection(report, rev),
    history: historyLine(report, rev),
  }));
}
