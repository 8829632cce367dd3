import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

/** Keeps the event loop busy, as a CPU-bound burst in production would. */
function blockEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy on purpose
  }
}

describe('overload protection', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('sqlite', { MAX_EVENT_LOOP_DELAY_MS: '20' });
  });
  after(() => server.close());

  test('answers 503 problem+json with Retry-After while the event loop lags', async () => {
    const deadline = Date.now() + 10_000;
    let overloaded: Awaited<ReturnType<typeof call>> | undefined;
    while (!overloaded && Date.now() < deadline) {
      blockEventLoop(300);
      await new Promise((resolve) => setImmediate(resolve)); // let under-pressure sample the delay
      const res = await call(server.url, 'GET', '/api/orders');
      if (res.status === 503) overloaded = res;
    }
    assert.ok(overloaded, 'never reported overload');
    assert.equal(overloaded.headers.get('retry-after'), '10');
    assert.equal(overloaded.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    assert.equal(overloaded.json.status, 503);
    assert.match(overloaded.json.type, /\/problems\/service-unavailable$/);
  });
});
