// Reading the Prometheus exposition in tests, and running Debian's prometheus/promtool as children
// (test/metrics/prometheus.test.ts). Without them a test skips, unless TEST_PROMETHEUS_REQUIRED=1 (CI).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { call } from './http.ts';

export const PROMETHEUS = '/usr/bin/prometheus';
export const PROMTOOL = '/usr/bin/promtool';

/** Why the Prometheus tests cannot run here, or undefined when they can. Required in CI: then a failure. */
export function prometheusMissing(): string | undefined {
  if (existsSync(PROMETHEUS) && existsSync(PROMTOOL)) return undefined;
  const why = `${PROMETHEUS} or ${PROMTOOL} is missing: apt-get install prometheus (the test never starts the service)`;
  if (process.env.TEST_PROMETHEUS_REQUIRED === '1') throw new Error(`TEST_PROMETHEUS_REQUIRED=1 but ${why}`);
  return why;
}

/**
 * GET /metrics as text; fails with the status and body unless it is a 200 exposition. `baseUrl` is the
 * metrics listener (a test server's `metricsUrl`), or the API's with METRICS_PORT=main; `token` is sent
 * as METRICS_TOKEN would be.
 */
export async function scrape(baseUrl: string | undefined, token?: string): Promise<string> {
  if (!baseUrl) throw new Error('no metrics listener to scrape (METRICS_PORT=main or off?)');
  const result = await call(baseUrl, 'GET', '/metrics', { token });
  if (result.status !== 200 || !result.headers.get('content-type')?.startsWith('text/plain'))
    throw new Error(`GET ${baseUrl}/metrics: ${result.status} ${result.headers.get('content-type')}\n${result.text}`);
  return result.text;
}

/**
 * The value of the sample `name` whose labels include `labels` (0 when no such series exists yet: a
 * counter with labels appears on its first increment).
 */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => present[k] === v)) return Number(match[3]);
  }
  return 0;
}

/** `promtool <args>` with `input` on stdin, bounded; returns the exit status and what it printed. */
export function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL, args, { input, encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, output: `${run.stdout ?? ''}${run.stderr ?? ''}${run.error ? String(run.error) : ''}` };
}

/** A foreground Prometheus with its own config and storage; `stop()` kills it and waits (bounded). */
export function startPrometheus(
  configFile: string,
  storage: string,
  port: number,
): {
  child: ChildProcess;
  log: () => string;
  stop: () => Promise<void>;
} {
  const child = spawn(
    PROMETHEUS,
    [`--config.file=${configFile}`, `--storage.tsdb.path=${storage}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-8000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    log: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
