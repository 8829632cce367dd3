import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LoopLag, SUSTAINED_WINDOWS } from '../../src/http/admission/overload.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/deadline.ts';

/** Keeps the event loop busy, as a CPU-bound burst in production would. */
function blockEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy on purpose
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Blocks the loop in bursts, as sustained CPU-bound work does, until `probe` answers 503 (or 10 s pass). */
async function overloadUntil503(server: TestServer, path: string): Promise<Awaited<ReturnType<typeof call>>> {
  let last: Awaited<ReturnType<typeof call>> | undefined;
  await waitUntil(
    async () => {
      blockEventLoop(300);
      await tick(); // let the sampler close its window
      last = await call(server.url, 'GET', path);
      return last.status === 503;
    },
    10_000,
    () => `${path} never reported overload; last answer ${last?.status} ${JSON.stringify(last?.json)}`,
  );
  return last!;
}

describe('overload protection', () => {
  test('LoopLag: only SUSTAINED_WINDOWS lagging windows in a row make overload', () => {
    const lag = new LoopLag(100);
    lag.record(5_000); // one long stall, however long, is one window
    assert.equal(lag.overloaded, false);
    for (let i = 1; i < SUSTAINED_WINDOWS; i++) lag.record(150);
    assert.equal(lag.overloaded, true);
    lag.record(20);
    assert.equal(lag.overloaded, false, 'one window on time ends it');
    for (let i = 0; i < SUSTAINED_WINDOWS - 1; i++) lag.record(150);
    assert.equal(lag.overloaded, false);
  });

  describe('sustained lag', () => {
    let server: TestServer;
    before(async () => {
      server = await startServer('sqlite', { MAX_EVENT_LOOP_DELAY_MS: '20' });
    });
    after(() => server.close());

    test('answers 503 problem+json with Retry-After while the event loop lags', async () => {
      const overloaded = await overloadUntil503(server, '/api/orders');
      assert.equal(overloaded.headers.get('retry-after'), '10');
      assert.equal(overloaded.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal(overloaded.json.status, 503);
      assert.match(overloaded.json.type, /\/problems\/service-unavailable$/);
    });

    test('/readyz agrees with the API (503 while shedding) and /healthz stays 200', async () => {
      const ready = await overloadUntil503(server, '/readyz');
      assert.match(ready.json.detail, /overloaded/, JSON.stringify(ready.json));
      const live = await call(server.url, 'GET', '/healthz');
      assert.equal(live.status, 200, JSON.stringify(live.json));
    });
  });

  describe('a single stall', () => {
    let server: TestServer;
    before(async () => {
      server = await startServer('sqlite', { MAX_EVENT_LOOP_DELAY_MS: '100' });
    });
    after(() => server.close());

    test('a fresh server serves the requests after one long synchronous step (start-up, a key reload)', async () => {
      // One stall far past the limit, as a provider rebuild on a loaded machine: the loop is free
      // again afterwards, so the requests that follow are served, and /readyz says so too.
      blockEventLoop(1_500);
      await tick();
      const api = await call(server.url, 'GET', '/api/orders');
      assert.equal(api.status, 401, JSON.stringify(api.json));
      const ready = await call(server.url, 'GET', '/readyz');
      assert.equal(ready.status, 200, JSON.stringify(ready.json));
    });
  });
});
