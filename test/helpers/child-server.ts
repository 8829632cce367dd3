// `signet serve` as a real child process, for what only a process can show: that it stays alive (an
// uncaught exception would end it), how it exits, and what it logs. Every wait has a deadline and
// reports the child's output when it fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withDeadline } from './deadline.ts';
import { copySqliteTemplate } from './database-template.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE, type TestIssuer } from './tokens.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;

export interface ChildServer {
  child: ChildProcess;
  url: string;
  port: number;
  issuer: TestIssuer;
  /** Directory of the SQLite file (when the test did not pass DATABASE_URL). */
  dir: string;
  output(): string;
  /** Resolves with the first match of `pattern` in the output so far or to come. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves with the exit code (null when killed by a signal); await it through waitForExit. */
  exited: Promise<number | null>;
  /** The exit code, or a failure carrying the output when the process is still running after `timeoutMs`. */
  waitForExit(timeoutMs?: number): Promise<number | null>;
  alive(): boolean;
  /** SIGKILL if still running, remove the temporary directory. */
  stop(): Promise<void>;
}

export interface ChildServerOptions {
  env?: Record<string, string>;
  /** Soft and hard open-file limit for the child (`ulimit -n`). */
  openFileLimit?: number;
  readyTimeoutMs?: number;
}

export async function startChildServer(options: ChildServerOptions = {}): Promise<ChildServer> {
  const dir = mkdtempSync(join(tmpdir(), 'signet-child-'));
  // Migrated already, unless the test names a database of its own: the child's start is then mostly Node's.
  if (!options.env?.DATABASE_URL) await copySqliteTemplate(join(dir, 'signet.db'));
  const issuer = await createTestIssuer();
  const env = {
    ...process.env,
    PORT: '0',
    LOG_LEVEL: 'info',
    DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`,
    AUTH_ISSUER: TEST_ISSUER,
    API_RESOURCE: TEST_RESOURCE,
    AUTH_JWKS_FILE: issuer.jwksFile,
    RATE_LIMIT_MAX: '1000000',
    OAUTH_RATE_LIMIT_MAX: '1000000',
    OAUTH_RATE_LIMIT_FAILURES: '1000000',
    // A free loopback port, never 9464: test files run four at a time.
    METRICS_PORT: '0',
    ...options.env,
  };
  const child = options.openFileLimit
    ? spawn('sh', ['-c', `ulimit -n ${options.openFileLimit} && exec "$0" "$1" serve`, process.execPath, BIN], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const waiters = new Set<() => void>();
  const append = (chunk: Buffer): void => {
    output += chunk.toString();
    for (const check of [...waiters]) check();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  // 'close' comes after 'exit' once the output has been read to its end: only then can nothing more match.
  let closed = false;
  child.once('close', () => {
    closed = true;
    for (const check of [...waiters]) check();
  });
  const waitFor = (pattern: RegExp, timeoutMs = 15_000): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`no ${pattern} within ${timeoutMs} ms; output:\n${output}`)),
        timeoutMs,
      );
      const finish = (result: RegExpExecArray | Error): void => {
        clearTimeout(timer);
        waiters.delete(check);
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      const check = (): void => {
        const match = pattern.exec(output);
        if (match) finish(match);
        else if (closed) finish(new Error(`exited with ${exitCode} before ${pattern}; output:\n${output}`));
      };
      waiters.add(check);
      check();
    });
  const server: ChildServer = {
    child,
    url: '',
    port: 0,
    issuer,
    dir,
    output: () => output,
    waitFor,
    exited,
    waitForExit: (timeoutMs = 30_000) =>
      withDeadline(exited, timeoutMs, () => `signet serve (pid ${child.pid}) has not exited; output:\n${output}`),
    alive: () => exitCode === undefined,
    stop: async () => {
      if (exitCode === undefined) child.kill('SIGKILL');
      await server.waitForExit(10_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    server.port = Number((await waitFor(/listening at http:\/\/127\.0\.0\.1:(\d+)/, options.readyTimeoutMs))[1]);
  } catch (err) {
    await server.stop();
    throw err;
  }
  server.url = `http://127.0.0.1:${server.port}`;
  return server;
}
