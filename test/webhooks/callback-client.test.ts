// What one attempt's outcome is, as the receiver's answer arrives over real HTTP: the status line decides
// (docs/guides/producing-webhooks.md, "What a delivery looks like": any 2xx acknowledges); a body that is slow or cut
// off afterwards is only a shorter excerpt, never a failed attempt that would send the delivery again.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { CallbackClient } from '../../src/webhooks/delivery/callback-client.ts';
import { AddressPolicy } from '../../src/webhooks/delivery/address-policy.ts';
import { closeWithin, listenOnLoopback, withDeadline } from '../helpers/deadline.ts';

let server: Server;
let base: string;
const open = new Set<ServerResponse>();
const client = new CallbackClient({
  timeoutMs: 300,
  connectionsPerOrigin: 4,
  policy: new AddressPolicy(['loopback']),
  userAgent: 'test',
});

before(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === '/slow-body') {
      res.writeHead(200, { 'content-type': 'text/plain' }).write('got it, now thinking'); // and never ends
      open.add(res);
    } else if (req.url === '/cut-body') {
      res.writeHead(202, { 'content-length': '100' }).write('partial');
      setTimeout(() => res.destroy(), 20);
    } else if (req.url === '/slow-error') {
      res.writeHead(503, { 'retry-after': '7' }).write('busy');
      open.add(res);
    } else {
      res.writeHead(200).end('fine');
    }
  });
  base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
});

after(async () => {
  for (const res of open) res.destroy();
  await client.close();
  await closeWithin(server, 'the test receiver');
});

/** One attempt through the client under test; its own timeout is 300 ms, so 10 s means it is stuck. */
function post(path: string) {
  return withDeadline(client.post(`${base}${path}`, {}, '{}'), 10_000, `the callback client's POST ${path}`);
}

test('a 2xx whose body never ends within the timeout acknowledges the delivery, with the excerpt received so far', async () => {
  const result = await post('/slow-body');
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(result.statusCode, 200);
  assert.equal(result.errorKind, null);
  assert.equal(result.responseExcerpt, 'got it, now thinking');
});

test('a 2xx whose connection drops mid-body still acknowledges the delivery', async () => {
  const result = await post('/cut-body');
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(result.statusCode, 202);
  assert.equal(result.responseExcerpt, 'partial');
});

test('a 503 with a slow body stays a 503 with its Retry-After, not a timeout', async () => {
  const result = await post('/slow-error');
  assert.equal(result.ok, false, JSON.stringify(result));
  assert.equal(result.statusCode, 503);
  assert.equal(result.errorKind, 'status');
  assert.equal(result.retryAfterMs, 7000);
});

test('a refused connection is reported by its meaning and code, never by the address the host resolved to', async () => {
  const closed = createServer();
  const port = await listenOnLoopback(closed);
  await closeWithin(closed, 'the closed port');
  // A host name, as an endpoint would register it: what it resolved to is this network's business.
  const result = await withDeadline(
    client.post(`http://localhost:${port}/hook`, {}, '{}'),
    10_000,
    'a POST to a closed port',
  );
  assert.equal(result.ok, false, JSON.stringify(result));
  assert.equal(result.errorKind, 'connection', JSON.stringify(result));
  assert.equal(result.errorDetail, 'connection refused (ECONNREFUSED)', JSON.stringify(result));
});
