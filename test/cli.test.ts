import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { expectStatus } from './helpers/expect.ts';
import { COMMAND_TIMEOUT_MS, exitOf, listenOnLoopback, outcome, withDeadline } from './helpers/deadline.ts';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE } from './helpers/tokens.ts';
import { CALL_TIMEOUT_MS, CUSTOMER } from './helpers/http.ts';

const BIN = new URL('../bin/signet.js', import.meta.url).pathname;

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
    timeout: COMMAND_TIMEOUT_MS,
  });
}

/** How long a line the server logs for a request it has answered, or its start-up line, may take. */
const LOG_LINE_TIMEOUT_MS = 20_000;

/**
 * Collects a child's stdout and stderr. `waitFor` resolves once the output matches; it fails with the
 * output so far when the child exits first or nothing matches within its deadline.
 */
function outputWatcher(child: ChildProcess) {
  let output = '';
  const waiters = new Set<() => void>();
  const append = (chunk: Buffer): void => {
    output += chunk.toString();
    for (const check of [...waiters]) check();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  // 'close', not 'exit': only then has all the output been read, so nothing more can match.
  let closed = false;
  child.once('close', () => {
    closed = true;
    for (const check of [...waiters]) check();
  });
  const waitFor = (pattern: RegExp, timeoutMs = LOG_LINE_TIMEOUT_MS) => {
    let check = (): void => undefined;
    const found = new Promise<RegExpExecArray>((resolve, reject) => {
      check = () => {
        const match = pattern.exec(output);
        if (match) resolve(match);
        else if (closed)
          reject(new Error(`exited with ${child.exitCode ?? child.signalCode} before ${pattern}; output:\n${output}`));
      };
      check();
    });
    waiters.add(check);
    return withDeadline(found, timeoutMs, () => `no ${pattern} in the output:\n${output}`).finally(() =>
      waiters.delete(check),
    );
  };
  return { waitFor, output: () => output };
}

describe('signet command', () => {
  test('migrate creates and migrates the SQLite file, then reports it is up to date', () => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'nested', 'signet.db')}` };
    const first = run(['migrate'], env);
    assert.equal(first.status, 0, outcome(first));
    assert.match(first.stdout, /applied: 0001-orders/);
    assert.ok(existsSync(join(dir, 'nested', 'signet.db')));
    const second = run(['migrate'], env);
    assert.match(second.stdout, /up to date/, outcome(second));
  });

  test('refuses to start on invalid configuration, naming the variable', () => {
    const result = run(['serve'], { PORT: 'x' });
    assert.equal(result.status, 1, outcome(result));
    assert.match(result.stderr, /invalid configuration: PORT:/);
  });

  test('unknown commands print usage and exit 2', () => {
    const result = run(['frobnicate']);
    assert.equal(result.status, 2, outcome(result));
    assert.match(result.stderr, /usage: signet/);
  });

  test('serve logs JSON lines carrying the request id it answers with, never the bearer token', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PORT: '0',
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => child.kill('SIGKILL')); // a no-op once it has exited
    const { waitFor, output } = outputWatcher(child);
    const port = Number((await waitFor(/listening at http:\/\/127\.0\.0\.1:(\d+)/))[1]);
    const secret = 'not-a-jwt-but-still-a-secret-0123456789';
    const response = await fetch(`http://127.0.0.1:${port}/api/orders/1`, {
      headers: { authorization: `Bearer ${secret}` },
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    // The log line awaited below is the 401's: any other answer (a 503 from the overload guard) would never log one.
    await expectStatus(response, 401);
    const requestId = response.headers.get('x-request-id') ?? '';
    assert.match(requestId, /^[0-9a-f-]{36}$/);
    const line = (await waitFor(new RegExp(`\\{[^\\n]*"reqId":"${requestId}"[^\\n]*"statusCode":401[^\\n]*\\}`)))[0];
    assert.equal(JSON.parse(line).reqId, requestId);
    child.kill('SIGTERM');
    await exitOf(child, 30_000, output);
    const all = await waitFor(/shutting down/).then((m) => m.input);
    assert.ok(!all.includes(secret), 'the token must not appear in the logs');
  });

  test('serve finishes an in-flight request on SIGTERM, then exits cleanly', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const issuer = await createTestIssuer();
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PORT: '0',
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`,
        AUTH_ISSUER: TEST_ISSUER,
        API_RESOURCE: TEST_RESOURCE,
        AUTH_JWKS_FILE: issuer.jwksFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => child.kill('SIGKILL')); // a no-op once it has exited
    const { waitFor, output } = outputWatcher(child);
    const port = Number((await waitFor(/listening at http:\/\/127\.0\.0\.1:(\d+)/))[1]);
    const token = await issuer.clientToken('orders:write');
    const body = JSON.stringify({ CustomerId: CUSTOMER, Total: 3 });
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/orders',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length },
    });
    t.after(() => req.destroy());
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    // Half the body, wait until the server has the request, signal it, then finish the body:
    // the request is in flight while the server shuts down.
    req.write(body.slice(0, 10));
    await waitFor(/"url":"\/api\/orders"[^\n]*"msg":"incoming request"/);
    child.kill('SIGTERM');
    await waitFor(/"msg":"shutting down"/);
    req.end(body.slice(10));
    const answer = await withDeadline(
      response,
      CALL_TIMEOUT_MS,
      () => `the in-flight POST's answer; output:\n${output()}`,
    );
    assert.equal(answer.status, 201, `${answer.body}\noutput:\n${output()}`);
    const code = await exitOf(child, 30_000, output);
    assert.equal(code, 0, output());
  });

  test('serve exits non-zero with a clear message when its port is already taken', { timeout: 60_000 }, async (t) => {
    const holder = createServer();
    const port = await listenOnLoopback(holder);
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PORT: String(port),
        METRICS_PORT: '0',
        LOG_LEVEL: 'silent',
        DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => {
      child.kill('SIGKILL'); // only if it is still there (the bug: it stayed, serving nothing)
      holder.close();
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await exitOf(child, 30_000, () => stderr);
    assert.equal(code, 1, stderr);
    assert.match(stderr, new RegExp(`signet: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
  });

  test('serve exits non-zero naming METRICS_PORT when the metrics port is taken', { timeout: 60_000 }, async (t) => {
    const holder = createServer();
    const port = await listenOnLoopback(holder);
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PORT: '0',
        METRICS_PORT: String(port),
        LOG_LEVEL: 'silent',
        DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => {
      child.kill('SIGKILL');
      holder.close();
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await exitOf(child, 30_000, () => stderr);
    assert.equal(code, 1, stderr);
    assert.match(
      stderr,
      new RegExp(`signet: METRICS_PORT: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`),
    );
  });
});
