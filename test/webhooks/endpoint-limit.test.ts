// The per-client endpoint limit under a race between processes: `signet serve` as a child process and
// an in-process server on one database, each taking half of 80 concurrent registrations. Within one
// process SQLite's synchronous driver never interleaves a count with another insert; across processes
// it can, as PostgreSQL always can. Both dialects.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { MAX_ENDPOINTS_PER_OWNER } from '../../src/webhooks/api/endpoints.service.ts';
import { createTestDatabase, TEST_WEBHOOK_SECRET_KEY, testDialects } from '../helpers/databases.ts';
import { exitOf } from '../helpers/deadline.ts';
import { expectStatus } from '../helpers/expect.ts';
import { call } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';
import { TEST_ISSUER, TEST_RESOURCE } from '../helpers/tokens.ts';
import { waitUntil, WEBHOOK_SCOPES } from '../helpers/webhook-receiver.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const LISTENING = /listening at (http:\/\/127\.0\.0\.1:\d+)/;

for (const dialect of testDialects()) {
  test(`[${dialect}] a client racing 80 registrations through two processes gets exactly ${MAX_ENDPOINTS_PER_OWNER} endpoints, and 409 limit-reached for the rest`, async () => {
    const database = await createTestDatabase(dialect);
    const server = await startServer(dialect, { DATABASE_URL: database.url });
    const env = {
      DATABASE_URL: database.url,
      PORT: '0',
      HOST: '127.0.0.1',
      AUTH_ISSUER: TEST_ISSUER,
      API_RESOURCE: TEST_RESOURCE,
      AUTH_JWKS_FILE: server.issuer.jwksFile,
      RATE_LIMIT_MAX: '100000',
      WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
      WEBHOOK_DISPATCHER: 'false',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      LOG_LEVEL: 'info',
      METRICS_PORT: 'off',
    };
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitUntil(
        () => LISTENING.test(output) || child.exitCode !== null,
        15_000,
        () => `signet serve did not start: ${output}`,
      );
      const other = LISTENING.exec(output)?.[1];
      assert.ok(other, `signet serve exited: ${output}`);
      const token = await server.issuer.clientToken(WEBHOOK_SCOPES, 'racing-client');
      const body = { Url: 'https://example.com/hook', Events: ['order.deleted'] };
      const raced = await Promise.all(
        Array.from({ length: 80 }, (_, i) =>
          call(i % 2 ? other : server.url, 'POST', '/api/webhooks', { token, body }),
        ),
      );
      const statuses = raced.map((r) => r.status);
      // Any answer but 201 or 409 (a 503, a 500) explains a miscount: show the first of them with its body.
      const unexpected = raced.find((r) => r.status !== 201 && r.status !== 409);
      const seen = `${JSON.stringify(statuses)}${unexpected ? `; first other answer ${unexpected.status}: ${unexpected.text}` : ''}`;
      assert.equal(statuses.filter((s) => s === 201).length, MAX_ENDPOINTS_PER_OWNER, seen);
      assert.equal(statuses.filter((s) => s === 409).length, 80 - MAX_ENDPOINTS_PER_OWNER, seen);
      assert.ok(raced.filter((r) => r.status === 409).every((r) => String(r.json.type).endsWith('/limit-reached')));
      const list = await call(server.url, 'GET', '/api/webhooks', { token });
      expectStatus(list, 200);
      assert.equal(list.json.Items.length, MAX_ENDPOINTS_PER_OWNER, list.text);
    } finally {
      child.kill('SIGTERM');
      await exitOf(child, 30_000, () => output);
      await server.close();
      await database.drop();
    }
  });
}
