// Where /metrics is served and who may read it (docs/operations/monitoring.md, "Metrics"): by default on a
// listener of its own on loopback, never on the API port; on the API port only behind METRICS_TOKEN or
// METRICS_ALLOW; refusals are problem+json (401 with a Bearer challenge, RFC 6750 §3; 403). Real HTTP on
// 127.0.0.1, every listener on a free port.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { startAuthServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { closeWithin, listenOnLoopback } from '../helpers/deadline.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { sample, scrape } from '../helpers/prometheus.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const TOKEN = 'metrics-token-0123456789-abcdefghijklmnop';
const HTTP = 'signet_http_request_duration_seconds_count';

async function withServer(
  dialect: Parameters<typeof startServer>[0],
  env: Record<string, string>,
  run: (server: TestServer) => Promise<void>,
): Promise<void> {
  const server = await startServer(dialect, env);
  try {
    await run(server);
  } finally {
    await server.close();
  }
}

function assertProblem(result: CallResult, status: number, slug: string): void {
  assert.equal(result.status, status, result.text);
  assert.match(result.headers.get('content-type') ?? '', /^application\/problem\+json/, result.text);
  const body = result.json as { type: string; title: string; status: number; detail: string };
  assert.equal(body.status, status, result.text);
  assert.ok(body.type.endsWith(`/problems/${slug}`), result.text);
  assert.ok(body.title && body.detail, result.text);
  assert.ok(!result.text.includes(TOKEN), 'the token appeared in a refusal');
}

/** 401 without a token and with a wrong one (RFC 6750 §3.1 challenges), 200 with the right one. */
async function assertTokenRequired(base: string): Promise<void> {
  const missing = await call(base, 'GET', '/metrics');
  assertProblem(missing, 401, 'unauthorized');
  assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="metrics"');
  const wrong = await call(base, 'GET', '/metrics', { token: `${TOKEN}x` });
  assertProblem(wrong, 401, 'invalid-token');
  assert.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="metrics", error="invalid_token"');
  const basic = await call(base, 'GET', '/metrics', { headers: { authorization: `Basic ${TOKEN}` } });
  assertProblem(basic, 401, 'unauthorized');
  assert.match(await scrape(base, TOKEN), /^# TYPE signet_http_request_duration_seconds histogram$/m);
}

for (const dialect of testDialects()) {
  describe(`where /metrics is served (${dialect})`, () => {
    test('by default on a loopback listener of its own, not on the API port, and closed with the app', async () => {
      // The default port is 9464 (test/config.test.ts); 0 here, since test files run side by side.
      const server = await startServer(dialect, { METRICS_PORT: '0' });
      const own = server.metricsUrl!;
      try {
        assert.deepEqual(server.app.metricsAddress()?.host, '127.0.0.1');
        const main = await call(server.url, 'GET', '/metrics');
        assert.equal(main.status, 404, main.text);
        await call(server.url, 'GET', '/healthz');
        const text = await scrape(own);
        assert.ok(sample(text, HTTP, { route: '/healthz', method: 'GET', status_class: '2xx' }) >= 1, text);
        const other = await call(own, 'GET', '/healthz');
        assert.equal(other.status, 404, other.text);
      } finally {
        await server.close();
      }
      await assert.rejects(call(own, 'GET', '/metrics'), 'the metrics listener outlived the app');
    });

    test('METRICS_PORT=off: no /metrics anywhere', async () => {
      await withServer(dialect, { METRICS_PORT: 'off' }, async (server) => {
        assert.equal(server.metricsUrl, undefined);
        const main = await call(server.url, 'GET', '/metrics');
        assert.equal(main.status, 404, main.text);
        assert.match(main.headers.get('content-type') ?? '', /^application\/problem\+json/, main.text);
      });
    });

    test('METRICS_PORT=main with METRICS_TOKEN: 401 without the token or with a wrong one', async () => {
      await withServer(dialect, { METRICS_PORT: 'main', METRICS_TOKEN: TOKEN }, async (server) => {
        assert.equal(server.metricsUrl, undefined);
        await assertTokenRequired(server.url);
      });
    });

    test('METRICS_PORT=main with METRICS_ALLOW: 403 to an address not listed, 200 to one listed', async () => {
      await withServer(dialect, { METRICS_PORT: 'main', METRICS_ALLOW: '10.0.0.0/8, fd00::/8' }, async (server) => {
        assertProblem(await call(server.url, 'GET', '/metrics'), 403, 'forbidden');
      });
      await withServer(dialect, { METRICS_PORT: 'main', METRICS_ALLOW: '10.0.0.0/8, 127.0.0.1' }, async (server) => {
        await scrape(server.url);
      });
    });

    test('METRICS_ALLOW on the API port checks the client address TRUST_PROXY resolves', async () => {
      const env = { METRICS_PORT: 'main', METRICS_ALLOW: '203.0.113.0/24', TRUST_PROXY: 'loopback' };
      await withServer(dialect, env, async (server) => {
        const forwarded = (address: string) =>
          call(server.url, 'GET', '/metrics', { headers: { 'x-forwarded-for': address } });
        assert.equal((await forwarded('203.0.113.7')).status, 200);
        assertProblem(await forwarded('198.51.100.7'), 403, 'forbidden');
      });
    });

    test('with both METRICS_ALLOW and METRICS_TOKEN, a scrape needs both', async () => {
      const env = { METRICS_PORT: 'main', METRICS_ALLOW: '127.0.0.0/8', METRICS_TOKEN: TOKEN };
      await withServer(dialect, env, (server) => assertTokenRequired(server.url));
      const elsewhere = { ...env, METRICS_ALLOW: '10.0.0.0/8' };
      await withServer(dialect, elsewhere, async (server) => {
        assertProblem(await call(server.url, 'GET', '/metrics', { token: TOKEN }), 403, 'forbidden');
      });
    });

    test('the metrics listener checks METRICS_TOKEN and METRICS_ALLOW too', async () => {
      await withServer(dialect, { METRICS_TOKEN: TOKEN }, (server) => assertTokenRequired(server.metricsUrl!));
      await withServer(dialect, { METRICS_ALLOW: '10.0.0.0/8' }, async (server) => {
        assertProblem(await call(server.metricsUrl!, 'GET', '/metrics'), 403, 'forbidden');
      });
      await withServer(dialect, { METRICS_ALLOW: '127.0.0.1' }, async (server) => {
        await scrape(server.metricsUrl);
      });
    });

    test('METRICS_ALLOW names an IPv4 peer of a dual-stack listener in its IPv4 form', async () => {
      // On `::` an IPv4 client's address is ::ffff:127.0.0.1.
      await withServer(dialect, { METRICS_HOST: '::', METRICS_ALLOW: '127.0.0.1' }, async (server) => {
        await scrape(`http://127.0.0.1:${server.app.metricsAddress()!.port}`);
      });
    });

    test('the listener logs where it listens; the token is never logged', async () => {
      const lines: Record<string, unknown>[] = [];
      const own = await startAuthServer(dialect, { METRICS_TOKEN: TOKEN }, undefined, { logLines: lines });
      try {
        const listening = lines.find((line) => line.msg === 'metrics listening');
        assert.deepEqual(
          { host: listening?.host, port: listening?.port },
          { host: '127.0.0.1', port: own.app.metricsAddress()?.port },
        );
        await scrape(own.metricsUrl, TOKEN);
      } finally {
        await own.close();
      }
      const env = { METRICS_PORT: 'main', METRICS_TOKEN: TOKEN, LOG_LEVEL: 'debug' };
      const main = await startAuthServer(dialect, env, undefined, { logLines: lines });
      try {
        await assertTokenRequired(main.url);
      } finally {
        await main.close();
      }
      assert.ok(lines.length > 0);
      assert.ok(!JSON.stringify(lines).includes(TOKEN), 'the metrics token appeared in the log');
    });

    test('a metrics port already in use stops the start, naming METRICS_PORT', async () => {
      const holder = createServer();
      const port = await listenOnLoopback(holder);
      try {
        await assert.rejects(
          startServer(dialect, { METRICS_PORT: String(port) }),
          (err: Error) => err.message.includes('METRICS_PORT') && err.message.includes(`127.0.0.1:${port}`),
        );
      } finally {
        await closeWithin(holder, 'the server holding the metrics port');
      }
    });
  });
}
