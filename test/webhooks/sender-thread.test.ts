// The dispatcher's attempts sent from a worker thread (src/webhooks/delivery/sender-thread.ts) come back
// exactly as the same CallbackClient reports them on this thread: status, excerpt, Retry-After, error
// kinds (timeout, redirect, refused address). Closing it aborts what is in flight, and each such attempt
// is a failure to retry, never a success and never a promise left hanging. Real HTTP on 127.0.0.1.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { AddressPolicy } from '../../src/webhooks/delivery/address-policy.ts';
import { CallbackClient, type AttemptResult } from '../../src/webhooks/delivery/callback-client.ts';
import { ThreadedCallbackClient } from '../../src/webhooks/delivery/sender-thread.ts';
import { closeWithin, listenOnLoopback, waitUntil, withDeadline } from '../helpers/deadline.ts';

let server: Server;
let base: string;
const hanging = new Set<ServerResponse>();
// Long enough that only /hang ever times out, however loaded the machine.
const settings = { timeoutMs: 10_000, connectionsPerOrigin: 8, userAgent: 'test' };
const local = new CallbackClient({ ...settings, policy: new AddressPolicy(['loopback']) });
const threaded = new ThreadedCallbackClient({ ...settings, allowedNetworks: ['loopback'] });
const quick = { ...settings, timeoutMs: 300 };
const localQuick = new CallbackClient({ ...quick, policy: new AddressPolicy(['loopback']) });
const threadedQuick = new ThreadedCallbackClient({ ...quick, allowedNetworks: ['loopback'] });

before(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === '/busy') res.writeHead(503, { 'retry-after': '7' }).end('busy');
    else if (req.url === '/moved') res.writeHead(302, { location: 'https://elsewhere.example/' }).end();
    else if (req.url === '/hang') hanging.add(res);
    else if (req.url === '/echo') res.writeHead(200).end(`${req.headers['x-test']} ${req.headers['user-agent']}`);
    else res.writeHead(200).end('fine');
  });
  base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
});

after(async () => {
  for (const res of hanging) res.destroy();
  await Promise.all([local.close(), threaded.close(), localQuick.close(), threadedQuick.close()]);
  await closeWithin(server, 'the test receiver');
});

/** What may differ between two attempts of the same request: only how long they took. */
function comparable(result: AttemptResult): Omit<AttemptResult, 'durationMs'> {
  const { durationMs, ...rest } = result;
  assert.ok(durationMs >= 0, `a duration: ${durationMs}`);
  return rest;
}

async function both(path: string) {
  const url = path.startsWith('http') ? path : `${base}${path}`;
  const [here, there] = await withDeadline(
    path === '/hang'
      ? Promise.all([localQuick.post(url, {}, '{}'), threadedQuick.post(url, {}, '{}')])
      : Promise.all([local.post(url, {}, '{}'), threaded.post(url, {}, '{}')]),
    30_000,
    `POST ${path} on both clients`,
  );
  return { here: comparable(here), there: comparable(there) };
}

test('every kind of answer comes back from the thread as the client on this thread reports it', async () => {
  for (const path of ['/ok', '/busy', '/moved', '/hang', 'http://10.0.0.1:9/refused']) {
    const { here, there } = await both(path);
    assert.deepEqual(there, here, path);
  }
  const { there: ok } = await both('/ok');
  assert.equal(ok.ok, true);
  assert.equal(ok.responseExcerpt, 'fine');
  const { there: busy } = await both('/busy');
  assert.equal(busy.retryAfterMs, 7000);
  const { there: hang } = await both('/hang');
  assert.equal(hang.errorKind, 'timeout');
  const { there: refused } = await both('http://10.0.0.1:9/refused');
  assert.equal(refused.errorKind, 'refused_address');
});

test('many attempts at once each get their own answer (batched both ways)', async () => {
  const results = await withDeadline(
    Promise.all(Array.from({ length: 50 }, (_, i) => threaded.post(`${base}/echo`, { 'x-test': String(i) }, '{}'))),
    60_000,
    '50 attempts through the thread',
  );
  assert.deepEqual(
    results.map((r) => r.responseExcerpt),
    results.map((_, i) => `${i} test`),
  );
});

test('closing the thread fails the attempts in flight (to be retried) and later ones, and never leaves one hanging', async () => {
  const client = new ThreadedCallbackClient({ ...settings, timeoutMs: 60_000, allowedNetworks: ['loopback'] });
  const before = hanging.size;
  const inFlight = client.post(`${base}/hang`, {}, '{}');
  await waitUntil(
    () => hanging.size > before,
    10_000,
    () => 'the attempt reaches the receiver before the close',
  );
  const queued = client.post(`${base}/hang`, {}, '{}'); // posted in the same turn as the close
  await withDeadline(client.close(), 10_000, 'closing the sender thread');
  assert.equal((await withDeadline(queued, 1000, 'the attempt posted just before the close')).ok, false);
  const result = await withDeadline(inFlight, 1000, 'the attempt in flight at the close');
  assert.equal(result.ok, false, JSON.stringify(result));
  const later = await withDeadline(client.post(`${base}/ok`, {}, '{}'), 1000, 'an attempt after the close');
  assert.equal(later.ok, false);
});
