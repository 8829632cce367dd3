// Output of the webhooks benchmark (`npm run bench -- webhooks`): the console table and the generated
// parts of the "Webhooks" section of docs/benchmarks.md (between the bench:webhooks:… markers; everything
// else in the file is left as written).
import { baselineRate, markdownGrid, textTable, writeDocsSections, type Machine } from '../lib/report.ts';

export interface WebhookRow {
  id: string;
  label: string;
  dialect: string;
  kind: 'baseline' | 'live' | 'latency' | 'backlog';
  /** Verified deliveries per second at the receiver. */
  deliveriesPerSecond: number;
  /** Orders created per second through the API (backlog: while filling the outbox). */
  ordersPerSecond: number;
  deliveries: number;
  /** Latency from the event's OccurredAtUtc to receipt (ms). */
  p50: number;
  p99: number;
  max: number;
  /** Latency from the API's 201 reaching the client (the commit is done) to receipt (ms). */
  commitP50: number;
  commitP99: number;
  /** POST /api/orders response time, from the scheduled send time (ms). */
  apiP50: number;
  apiP99: number;
  serverCpuUsPerDelivery: number;
  serverCores: number;
  receiverCores: number;
  clientCores: number;
  otherCores: number;
  serverElu: number;
  bodyBytes: number;
  /** Live: deliveries not yet received when order creation stopped, and how long they took to arrive. */
  backlogAtEnd?: number;
  drainSeconds?: number;
  unexpected: number;
  check: string;
  /** A diagnostic variant (run only when named): no targets. */
  diagnostic?: boolean;
}

export interface WebhookTargets {
  deliveriesPerSecond: number;
  baselineRatio: number;
  p50Ms: number;
  p99Ms: number;
}

/** From the issue, for this project's 2-core machine (load generator, receiver and Signet on it). */
export const WEBHOOK_TARGETS: WebhookTargets = { deliveriesPerSecond: 3000, baselineRatio: 0.5, p50Ms: 10, p99Ms: 50 };

export interface WebhookSettings {
  seconds: number;
  warmupSeconds: number;
  endpoints: number;
  orderConnections: number;
  rate: number;
  concurrency: number;
  endpointConcurrency: number;
}

export interface WebhookReport {
  rows: WebhookRow[];
  targets: WebhookTargets;
  machine: Machine;
  settings: WebhookSettings;
  date: Date;
}

function baselineOf(rows: WebhookRow[]): number | undefined {
  return baselineRate(rows.filter((r) => r.kind === 'baseline').map((r) => r.deliveriesPerSecond));
}

const int = (n: number | undefined) =>
  n !== undefined && Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '';
const fixed = (n: number, digits: number) => (n === Infinity ? '∞' : Number.isFinite(n) ? n.toFixed(digits) : '');
const mark = (ok: boolean) => (ok ? '✅' : '❌');

/** Each target of a row: [description, met]. */
function verdicts(row: WebhookRow, baseline: number | undefined, t: WebhookTargets): [string, boolean][] {
  if (row.diagnostic) return [];
  if (row.kind === 'live') {
    const list: [string, boolean][] = [
      [`≥ ${int(t.deliveriesPerSecond)}/s`, row.deliveriesPerSecond >= t.deliveriesPerSecond],
    ];
    if (baseline) list.push([`≥ ${t.baselineRatio}×`, row.deliveriesPerSecond / baseline >= t.baselineRatio]);
    return list;
  }
  if (row.kind === 'latency')
    return [
      [`p50 ≤ ${t.p50Ms}`, row.p50 <= t.p50Ms],
      [`p99 ≤ ${t.p99Ms}`, row.p99 <= t.p99Ms],
    ];
  return [];
}

const HEADER = [
  'Scenario',
  'DB',
  'deliveries/s',
  'orders/s',
  '× baseline',
  'latency p50 / p99 / max ms',
  'after 201: p50 / p99 ms',
  'Target',
  'Signet CPU µs/delivery',
  'Signet cores',
  'receiver cores',
  'load cores',
  'other cores',
  'Signet ELU',
  'Check',
];
const RIGHT = new Set([2, 3, 4, 8, 9, 10, 11, 12, 13]);

function tableRows(rows: WebhookRow[], targets: WebhookTargets): string[][] {
  const baseline = baselineOf(rows);
  return rows.map((row) => [
    row.label,
    row.dialect,
    int(row.deliveriesPerSecond),
    int(row.ordersPerSecond),
    baseline ? `${(row.deliveriesPerSecond / baseline).toFixed(2)}×` : '',
    row.kind === 'latency' ? `${fixed(row.p50, 1)} / ${fixed(row.p99, 1)} / ${fixed(row.max, 1)}` : '',
    row.kind === 'latency' ? `${fixed(row.commitP50, 1)} / ${fixed(row.commitP99, 1)}` : '',
    verdicts(row, baseline, targets)
      .map(([what, ok]) => `${what} ${mark(ok)}`)
      .join(', '),
    int(row.serverCpuUsPerDelivery),
    fixed(row.serverCores, 2),
    fixed(row.receiverCores, 2),
    fixed(row.clientCores, 2),
    fixed(row.otherCores, 2),
    Number.isFinite(row.serverElu) ? `${(row.serverElu * 100).toFixed(0)}%` : '',
    row.check,
  ]);
}

export function formatWebhooksTable(rows: WebhookRow[], targets: WebhookTargets = WEBHOOK_TARGETS): string {
  return textTable(HEADER, tableRows(rows, targets), (i) => RIGHT.has(i));
}

function markdownTable(rows: WebhookRow[], targets: WebhookTargets): string {
  return markdownGrid(HEADER, tableRows(rows, targets), (i) => RIGHT.has(i));
}

const HISTORY_HEADER =
  '| Date | Revision | s/scenario | baseline/s | SQLite live/s | × baseline | SQLite backlog/s | SQLite p50 / p99 ms | PG live/s | PG backlog/s | PG p50 / p99 ms | Targets |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|';

function misses(report: WebhookReport): string[] {
  const baseline = baselineOf(report.rows);
  return report.rows.flatMap((row) =>
    verdicts(row, baseline, report.targets)
      .filter(([, ok]) => !ok)
      .map(([what]) => `${row.dialect} ${row.kind} ${what}`),
  );
}

function latestSection(report: WebhookReport, rev: string): string {
  const { machine, settings } = report;
  const missed = misses(report);
  const bytes = report.rows.filter((r) => Number.isFinite(r.bodyBytes));
  const size = (kind: string) => int(bytes.find((r) => r.kind === kind)?.bodyBytes);
  return [
    '### Latest run',
    '',
    `- Date: ${report.date.toISOString().replace(/\.\d+Z$/, 'Z')}; revision ${rev}`,
    `- Machine: ${machine.cpus} CPUs (\`nproc\`), ${machine.model}, ${machine.memory} RAM, ${machine.os}; Node ${machine.node}`,
    `- Load: ${settings.seconds} s per scenario after ${settings.warmupSeconds} s warm-up; ${settings.endpoints} endpoints per order (one receiver, ${settings.endpoints} paths); ` +
      `WEBHOOK_CONCURRENCY ${settings.concurrency}, WEBHOOK_ENDPOINT_CONCURRENCY ${settings.endpointConcurrency}; live: ${settings.orderConnections} API clients in a closed loop; latency: ${settings.rate} events/s open loop`,
    `- Delivery body: ${size('live') || size('latency')} B from Signet, ${size('baseline')} B in the baseline (average)`,
    `- Targets: ${missed.length === 0 ? '**all met**' : `**${missed.length} missed** (${missed.join('; ')})`}`,
    '',
    markdownTable(report.rows, report.targets),
    '',
  ].join('\n');
}

function historyLine(report: WebhookReport, rev: string): string {
  const find = (dialect: string, kind: string) => report.rows.find((r) => r.dialect === dialect && r.kind === kind);
  const rate = (dialect: string, kind: string) => int(find(dialect, kind)?.deliveriesPerSecond);
  const latency = (dialect: string) => {
    const row = find(dialect, 'latency');
    return row ? `${fixed(row.p50, 1)} / ${fixed(row.p99, 1)}` : '';
  };
  const baseline = baselineOf(report.rows);
  const live = find('sqlite', 'live');
  const missed = misses(report);
  return `| ${report.date.toISOString().slice(0, 16).replace('T', ' ')} | ${rev} | ${report.settings.seconds} | ${int(baseline)} | ${rate('sqlite', 'live')} | ${live && baseline ? (live.deliveriesPerSecond / baseline).toFixed(2) : ''} | ${rate('sqlite', 'backlog')} | ${latency('sqlite')} | ${rate('postgres', 'live')} | ${rate('postgres', 'backlog')} | ${latency('postgres')} | ${missed.length === 0 ? 'all met' : `${missed.length} missed`} |`;
}

export function updateWebhooksDocs(file: string, report: WebhookReport): void {
  const markers = {
    suite: 'webhooks',
    latestHeading: '\n## Webhooks\n\n',
    historyHeading: '\n### Webhooks history\n\n',
    historyHeader: HISTORY_HEADER,
  };
  writeDocsSections(file, markers, (rev) => ({
    latest: latestSection(report, rev),
    history: historyLine(report, rev),
  }));
}
