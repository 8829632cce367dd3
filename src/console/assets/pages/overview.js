// The operator overview (docs/guides/portal.md): six charts over the last 24 h from GET /api/admin/stats
// (docs/guides/admin-api.md, Overview): webhook attempts per minute by outcome, the success rate, attempt latency
// p50/p99, pending deliveries, tokens per hour by grant and sign-ins per hour by outcome. Each chart has
// a summary sentence and a data table besides its canvas. Every bucket is present in the answer (zeros
// when empty), so the charts are drawn even for an idle day.
import { html, useEffect, useMemo, useState } from '../html.js';
import { api } from '../api.js';
import { Empty, ErrorBox, Loading } from '../components.js';
import { Chart } from '../charts.js';
import { Time } from './operator-common.js';

const COLORS = {
  ok: '#116329',
  failed: '#b42318',
  blue: '#0b5cad',
  purple: '#8250df',
  orange: '#bc4c00',
  grey: '#57606a',
  teal: '#1b7c83',
};
const GRANT_COLORS = [COLORS.blue, COLORS.ok, COLORS.purple, COLORS.orange, COLORS.teal, COLORS.grey];
const GRANT_LABELS = {
  authorization_code: 'Authorization code',
  refresh_token: 'Refresh token',
  client_credentials: 'Client credentials',
  'urn:ietf:params:oauth:grant-type:device_code': 'Device code',
  'urn:openid:params:grant-type:ciba': 'CIBA',
  other: 'Other',
};

const numbers = new Intl.NumberFormat('en');
const count = (n) => numbers.format(n);
const percent = (ratio) => `${(ratio * 100).toFixed(1)} %`;
const seconds = (iso) => Date.parse(iso) / 1000;
const sum = (items, pick) => items.reduce((total, item) => total + pick(item), 0);
/** A bucket's start as the tables show it: `2026-03-01 10:15Z`. */
const when = (iso) => iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, 'Z');
const plural = (n, one, many) => `${count(n)} ${n === 1 ? one : many}`;

/** 41 s, 12 min, 3 h 5 min, 2 d 4 h. */
export function duration(totalSeconds) {
  const s = Math.round(totalSeconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

function kinds(byKind) {
  return Object.entries(byKind)
    .sort((a, b) => b[1] - a[1])
    .map(([kind, n]) => `${kind} ${count(n)}`)
    .join(', ');
}

function attemptsChart(stats) {
  const buckets = stats.Webhooks.Attempts;
  const succeeded = sum(buckets, (b) => b.Succeeded);
  const failed = sum(buckets, (b) => b.Failed);
  const byKind = {};
  for (const b of buckets) for (const [k, n] of Object.entries(b.FailedByKind)) byKind[k] = (byKind[k] ?? 0) + n;
  const total = succeeded + failed;
  const busy = buckets.filter((b) => b.Succeeded + b.Failed > 0);
  return {
    id: 'chart-attempts',
    title: 'Webhook attempts per minute',
    summary:
      total === 0
        ? 'No webhook attempts in the last 24 h.'
        : `${plural(total, 'attempt', 'attempts')} in the last 24 h, ${percent(succeeded / total)} succeeded` +
          (failed > 0 ? `; ${count(failed)} failed (${kinds(byKind)}).` : '.'),
    plot: {
      x: buckets.map((b) => seconds(b.At)),
      yLabel: 'Attempts per minute',
      series: [
        { label: 'Succeeded', color: COLORS.ok, values: buckets.map((b) => b.Succeeded) },
        { label: 'Failed', color: COLORS.failed, values: buckets.map((b) => b.Failed) },
      ],
    },
    table: {
      caption: 'webhook attempts per minute (UTC)',
      note: `Only minutes with attempts are listed: ${count(busy.length)} of ${count(buckets.length)}.`,
      columns: ['Minute (UTC)', 'Succeeded', 'Failed', 'Failed by kind'],
      rows: busy.map((b) => [when(b.At), count(b.Succeeded), count(b.Failed), kinds(b.FailedByKind) || '—']),
    },
  };
}

/** The success rate per latency bucket (15 min), summed from the per-minute attempts; null without any. */
function successRateChart(stats) {
  const width = stats.BucketSeconds.Latency;
  const byBucket = new Map(stats.Webhooks.Latency.map((b) => [seconds(b.At), { ok: 0, all: 0, At: b.At }]));
  for (const a of stats.Webhooks.Attempts) {
    const bucket = byBucket.get(Math.floor(seconds(a.At) / width) * width);
    if (!bucket) continue;
    bucket.ok += a.Succeeded;
    bucket.all += a.Succeeded + a.Failed;
  }
  const buckets = [...byBucket.values()];
  const rate = stats.Webhooks.SuccessRate;
  const total = sum(buckets, (b) => b.all);
  return {
    id: 'chart-success',
    title: 'Success rate',
    headline: html`<span class="headline-value">${rate === null ? '—' : percent(rate)}</span>
      <span>of webhook attempts succeeded</span>`,
    summary:
      rate === null
        ? 'No webhook attempts in the last 24 h, so no success rate.'
        : `${percent(rate)} of ${plural(total, 'attempt', 'attempts')} succeeded in the last 24 h (per 15 minutes in the chart).`,
    plot: {
      x: buckets.map((b) => seconds(b.At)),
      yLabel: 'Succeeded (%)',
      yRange: () => [0, 100],
      yValue: (v) => `${Math.round(v * 10) / 10} %`,
      series: [
        {
          label: 'Success rate',
          color: COLORS.blue,
          values: buckets.map((b) => (b.all === 0 ? null : (b.ok / b.all) * 100)),
        },
      ],
    },
    table: {
      caption: 'success rate per 15 minutes (UTC)',
      columns: ['15 minutes from (UTC)', 'Attempts', 'Succeeded', 'Success rate'],
      rows: buckets.map((b) => [when(b.At), count(b.all), count(b.ok), b.all === 0 ? '—' : percent(b.ok / b.all)]),
    },
  };
}

function latencyChart(stats) {
  const buckets = stats.Webhooks.Latency;
  const measured = buckets.filter((b) => b.Count > 0);
  const max = (pick) => Math.max(...measured.map(pick));
  const ms = (v) => (v === null ? '—' : `${count(v)} ms`);
  return {
    id: 'chart-latency',
    title: 'Attempt latency (p50 and p99)',
    summary:
      measured.length === 0
        ? 'No webhook attempts in the last 24 h, so no latency.'
        : `Per 15 minutes, the median (p50) attempt took at most ${ms(max((b) => b.P50Ms))} and the 99th percentile at most ${ms(max((b) => b.P99Ms))}.`,
    plot: {
      x: buckets.map((b) => seconds(b.At)),
      yLabel: 'Duration (ms)',
      series: [
        { label: 'p50', color: COLORS.blue, values: buckets.map((b) => b.P50Ms) },
        { label: 'p99', color: COLORS.purple, values: buckets.map((b) => b.P99Ms) },
      ],
    },
    table: {
      caption: 'attempt latency per 15 minutes (UTC)',
      columns: ['15 minutes from (UTC)', 'Attempts', 'p50', 'p99'],
      rows: buckets.map((b) => [when(b.At), count(b.Count), ms(b.P50Ms), ms(b.P99Ms)]),
    },
  };
}

function pendingChart(stats) {
  const pending = stats.Webhooks.Pending;
  const peak = Math.max(0, ...pending.Series.map((p) => p.Count));
  return {
    id: 'chart-pending',
    title: 'Pending deliveries',
    headline: html`<span class="headline-value">${count(pending.Count)}</span>
      <span
        >pending
        now${pending.OldestAgeSeconds === null ? '' : `, the oldest for ${duration(pending.OldestAgeSeconds)}`}</span
      >`,
    summary:
      (pending.Count === 0
        ? 'No delivery is pending now.'
        : `${plural(pending.Count, 'delivery', 'deliveries')} pending now, the oldest created ${duration(pending.OldestAgeSeconds)} ago.`) +
      ` At most ${count(peak)} pending at a time in the last 24 h (every 15 minutes).`,
    plot: {
      x: pending.Series.map((p) => seconds(p.At)),
      yLabel: 'Deliveries pending',
      series: [{ label: 'Pending', color: COLORS.orange, values: pending.Series.map((p) => p.Count) }],
    },
    table: {
      caption: 'pending deliveries every 15 minutes (UTC)',
      columns: ['At the end of 15 minutes from (UTC)', 'Pending'],
      rows: pending.Series.map((p) => [when(p.At), count(p.Count)]),
    },
  };
}

function tokensChart(stats) {
  const buckets = stats.Tokens;
  const grants = [...new Set(buckets.flatMap((b) => Object.keys(b.ByGrant)))];
  const label = (g) => GRANT_LABELS[g] ?? g;
  const totals = grants.map((g) => [g, sum(buckets, (b) => b.ByGrant[g] ?? 0)]).filter(([, n]) => n > 0);
  const total = sum(buckets, (b) => b.Total);
  return {
    id: 'chart-tokens',
    title: 'Tokens issued per hour, by grant',
    summary:
      total === 0
        ? 'No tokens issued in the last 24 h.'
        : `${plural(total, 'token', 'tokens')} issued in the last 24 h: ` +
          `${totals
            .sort((a, b) => b[1] - a[1])
            .map(([g, n]) => `${label(g)} ${count(n)}`)
            .join(', ')}.`,
    plot: {
      x: buckets.map((b) => seconds(b.At)),
      yLabel: 'Tokens per hour',
      series: grants.map((g, n) => ({
        label: label(g),
        color: GRANT_COLORS[n % GRANT_COLORS.length],
        values: buckets.map((b) => b.ByGrant[g] ?? 0),
      })),
    },
    table: {
      caption: 'tokens issued per hour by grant (UTC)',
      columns: ['Hour (UTC)', 'Total', ...grants.map(label)],
      rows: buckets.map((b) => [when(b.At), count(b.Total), ...grants.map((g) => count(b.ByGrant[g] ?? 0))]),
    },
  };
}

function signInsChart(stats) {
  const buckets = stats.SignIns;
  const succeeded = sum(buckets, (b) => b.Succeeded);
  const failed = sum(buckets, (b) => b.Failed);
  return {
    id: 'chart-signins',
    title: 'Sign-ins per hour, by outcome',
    summary:
      succeeded + failed === 0
        ? 'No sign-ins in the last 24 h.'
        : `${plural(succeeded + failed, 'sign-in', 'sign-ins')} in the last 24 h: ${count(succeeded)} succeeded, ${count(failed)} failed.`,
    plot: {
      x: buckets.map((b) => seconds(b.At)),
      yLabel: 'Sign-ins per hour',
      series: [
        { label: 'Succeeded', color: COLORS.ok, values: buckets.map((b) => b.Succeeded) },
        { label: 'Failed', color: COLORS.failed, values: buckets.map((b) => b.Failed) },
      ],
    },
    table: {
      caption: 'sign-ins per hour by outcome (UTC)',
      columns: ['Hour (UTC)', 'Succeeded', 'Failed'],
      rows: buckets.map((b) => [when(b.At), count(b.Succeeded), count(b.Failed)]),
    },
  };
}

/**
 * No webhook activity in the window: no attempt, and nothing pending now or then. (A day without any
 * sign-in or token cannot be seen here: the operator's own sign-in counts.)
 */
function webhooksIdle(stats) {
  const w = stats.Webhooks;
  return (
    w.Attempts.every((b) => b.Succeeded + b.Failed === 0) &&
    w.Pending.Count === 0 &&
    w.Pending.Series.every((p) => p.Count === 0)
  );
}

function Charts({ stats }) {
  const charts = useMemo(
    () => [attemptsChart, successRateChart, latencyChart, pendingChart, tokensChart, signInsChart].map((f) => f(stats)),
    [stats],
  );
  return html`${
      webhooksIdle(stats)
        ? html`<${Empty}>No webhook activity in the last 24 h: no delivery attempts, and nothing pending. The webhook charts show zeros.</${Empty}>`
        : null
    }
    <div class="charts">${charts.map((chart) => html`<${Chart} key=${chart.id} ...${chart} />`)}</div>`;
}

/** The overview section of the home page, for operators. */
export function Overview() {
  const [state, setState] = useState({ loading: true });
  const load = async () => {
    setState((previous) => ({ ...previous, loading: true, error: null }));
    try {
      setState({ stats: await api('/admin/stats') });
    } catch (error) {
      setState({ error });
    }
  };
  useEffect(() => {
    load();
  }, []);
  const { stats, error, loading } = state;
  return html`<section class="overview" aria-labelledby="overview-title" aria-busy=${loading ? 'true' : 'false'}>
    <div class="overview-head">
      <h2 id="overview-title">Overview of the last 24 hours</h2>
      <button type="button" class="secondary" onClick=${load} disabled=${loading}>Refresh</button>
    </div>
    ${loading ? html`<${Loading} label=${stats ? 'Refreshing…' : 'Loading the overview…'} />` : null}
    ${error ? html`<${ErrorBox} error=${error} onRetry=${load} />` : null}
    ${
      stats
        ? html`<p class="overview-window">
              From <${Time} value=${stats.SinceUtc} /> to <${Time} value=${stats.UntilUtc} />.
            </p>
            <${Charts} stats=${stats} />`
        : null
    }
  </section>`;
}
