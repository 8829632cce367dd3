import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { createTestIssuer, TEST_ISSUER, TEST_RESOURCE } from './helpers/tokens.ts';
import { CUSTOMER } from './helpers/http.ts';

const BIN = new URL('../bin/signet.js', import.meta.url).pathname;

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
  });
}

/** Collects a child's stdout and resolves once a line matches. */
function outputWatcher(child: ChildProcess) {
  let output = '';
  const waiters: { pattern: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    for (const w of [...waiters]) {
      const match = w.pattern.exec(output);
      if (match) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(match);
      }
    }
  });
  return (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const match = pattern.exec(output);
      if (match) return resolve(match);
      waiters.push({ pattern, resolve });
      child.once('exit', (code) => reject(new Error(`exited with ${code} before ${pattern}: ${output}`)));
    });
}

describe('signet command', () => {
  test('migrate creates and migrates the SQLite file, then reports it is up to date', () => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'nested', 'signet.db')}` };
    const first = run(['migrate'], env);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /applied: 0001-orders/);
    assert.ok(existsSync(join(dir, 'nested', 'signet.db')));
    const second = run(['migrate'], env);
    assert.match(second.stdout, /up to date/);
  });

  test('refuses to start on invalid configuration, naming the variable', () => {
    const result = run(['serve'], { PORT: 'x' });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /invalid configuration: PORT:/);
  });

  test('unknown commands print usage and exit 2', () => {
    const result = run(['frobnicate']);
    assert.equal(result.status, 2);
    assert.match(result.stderr, /usage: signet/);
  });

  test('serve logs JSON lines carrying the request id it answers with, never the bearer token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', DATABASE_URL: `sqlite:${join(dir, 'signet.db')}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const waitFor = outputWatcher(child);
    const port = Number((await waitFor(/listening at http:\/\/127\.0\.0\.1:(\d+)/))[1]);
    const secret = 'not-a-jwt-but-still-a-secret-0123456789';
    const response = await fetch(`http://127.0.0.1:${port}/api/orders/1`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const requestId = response.headers.get('x-request-id') ?? '';
    assert.match(requestId, /^[0-9a-f-]{36}$/);
    const line = (await waitFor(new RegExp(`\\{[^\\n]*"reqId":"${requestId}"[^\\n]*"statusCode":401[^\\n]*\\}`)))[0];
    assert.equal(JSON.parse(line).reqId, requestId);
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    const all = await waitFor(/shutting down/).then((m) => m.input);
    assert.ok(!all.includes(secret), 'the token must not appear in the logs');
  });

  test('serve finishes an in-flight request on SIGTERM, then exits cleanly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const issuer = await createTestIssuer();
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PORT: '0',
        LOG_LEVEL: 'info',
        DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`,
        AUTH_ISSUER: TEST_ISSUER,
        API_RESOURCE: TEST_RESOURCE,
        AUTH_JWKS_FILE: issuer.jwksFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const waitFor = outputWatcher(child);
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
    const response = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
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
    assert.equal(await response, 201);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0);
  });

  test('serve exits non-zero with a clear message when its port is already taken', { timeout: 60_000 }, async (t) => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    const dir = mkdtempSync(join(tmpdir(), 'signet-cli-'));
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PORT: String(port),
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
    const [code] = await once(child, 'exit');
    assert.equal(code, 1, stderr);
    assert.match(stderr, new RegExp(`signet: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
  });
});
