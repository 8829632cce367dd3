// The real thing (docs/reference/metrics.md): Debian's Prometheus scrapes a running Signet's metrics
// listener every second, with METRICS_TOKEN as its scrape config's `authorization` credentials, and its
// HTTP API answers queries over the series; promtool accepts the exposition and the alert rules that page
// prints. Skipped when prometheus is not installed, unless TEST_PROMETHEUS_REQUIRED=1 (.ci/run).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call, fetchWithin } from '../helpers/http.ts';
import { prometheusMissing, promtool, scrape, startPrometheus } from '../helpers/prometheus.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const skip = prometheusMissing();
const METRICS_TOKEN = 'prometheus-scrapes-with-this-token-0123456789';
const METRICS_DOC = new URL('../../docs/reference/metrics.md', import.meta.url);

/** The YAML block of docs/reference/metrics.md that starts with `groups:`: the alert rules. */
function documentedAlertRules(): string {
  const block = /```yaml\n(groups:[\s\S]*?)```/.exec(readFileSync(METRICS_DOC, 'utf8'));
  assert.ok(block, 'no ```yaml block starting with groups: in docs/reference/metrics.md');
  return block[1]!;
}

interface QueryAnswer {
  status: string;
  data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
}

async function query(prometheus: string, expr: string): Promise<QueryAnswer> {
  const response = await fetchWithin(`${prometheus}/api/v1/query?query=${encodeURIComponent(expr)}`);
  return (await response.json()) as QueryAnswer;
}

for (const dialect of testDialects()) {
  describe(`Prometheus scrapes Signet (${dialect})`, { skip }, () => {
    let server: TestServer;
    let work: string;
    before(async () => {
      server = await startServer(dialect, { METRICS_TOKEN });
      work = mkdtempSync(join(tmpdir(), 'signet-prometheus-'));
    });
    after(async () => {
      await server?.close();
      if (work) rmSync(work, { recursive: true, force: true });
    });

    test('promtool check metrics accepts the exposition', async () => {
      await call(server.url, 'GET', '/healthz');
      const checked = promtool(['check', 'metrics'], await scrape(server.metricsUrl, METRICS_TOKEN));
      assert.equal(checked.status, 0, checked.output);
    });

    test('promtool check rules accepts the alert rules of docs/reference/metrics.md', () => {
      const file = join(work, 'signet-alerts.yml');
      writeFileSync(file, documentedAlertRules());
      const checked = promtool(['check', 'rules', file]);
      assert.equal(checked.status, 0, checked.output);
      assert.match(checked.output, /SUCCESS: 4 rules found/);
    });

    test('a scraping Prometheus answers queries over the series', async () => {
      const target = new URL(server.metricsUrl!).host;
      const config = join(work, 'prometheus.yml');
      writeFileSync(
        config,
        [
          'global:',
          '  scrape_interval: 1s',
          '  scrape_timeout: 1s',
          'scrape_configs:',
          '  - job_name: signet',
          '    metrics_path: /metrics',
          '    authorization:',
          `      credentials: ${METRICS_TOKEN}`,
          '    static_configs:',
          `      - targets: ['${target}']`,
          // The same target without the token: refused, so down.
          '  - job_name: no-token',
          '    metrics_path: /metrics',
          '    static_configs:',
          `      - targets: ['${target}']`,
          '',
        ].join('\n'),
      );
      const port = await freePort();
      const prometheus = startPrometheus(config, join(work, 'data'), port);
      const api = `http://127.0.0.1:${port}`;
      try {
        const token = await server.issuer.clientToken('orders:read');
        for (let i = 0; i < 3; i++) await call(server.url, 'GET', '/api/orders', { token });
        let last: unknown;
        const answer = async (expr: string) => {
          try {
            const result = await query(api, expr);
            last = result;
            return result.status === 'success' && (result.data?.result.length ?? 0) > 0 ? result : undefined;
          } catch (err) {
            last = err; // not listening yet
            return undefined;
          }
        };
        const detail = () => `${JSON.stringify(last)}\nprometheus log:\n${prometheus.log()}`;
        await waitUntil(
          async () => (await answer('up{job="signet"} == 1')) !== undefined,
          60_000,
          () => `the target never came up: ${detail()}`,
        );
        let requests: QueryAnswer | undefined;
        await waitUntil(
          async () =>
            (requests = await answer(
              'signet_http_request_duration_seconds_count{route="/api/orders",method="GET",status_class="2xx"}',
            )) !== undefined,
          60_000,
          () => `no request series: ${detail()}`,
        );
        assert.ok(Number(requests!.data!.result[0]!.value[1]) >= 3, JSON.stringify(requests));
        const pending = await answer('signet_webhook_deliveries_pending');
        assert.equal(pending?.data?.result[0]?.value[1], '0', detail());
        const cpu = await answer('process_cpu_seconds_total');
        assert.ok(cpu, `no process metrics: ${detail()}`);
        await waitUntil(
          async () => (await answer('up{job="no-token"} == 0')) !== undefined,
          60_000,
          () => `the scrape without the token was not refused: ${detail()}`,
        );
      } finally {
        await prometheus.stop();
      }
    });
  });
}
