// Adapter details beyond the rejection matrix: the Fastify plugin leaves its host app's JSON parsing
// alone, the node handler takes bytes a framework already read, and a failing inbox answers 500
// problem+json (no 200, so the producer retries) on both.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { test } from 'node:test';
import Fastify from 'fastify';
import { createWebhookHandler, openInbox, receiverPlugin, type Inbox } from '../../src/receiver/index.ts';
import { delivery, post, SECRET, startAdapter, type Adapter } from './kit-helpers.ts';
import { closeWithin, listenOnLoopback } from '../helpers/deadline.ts';
import { expectStatus } from '../helpers/expect.ts';

test('the Fastify plugin keeps raw bodies to its own scope: the host app still parses JSON', async () => {
  const inbox = await openInbox('sqlite::memory:');
  const app = Fastify({ logger: false });
  app.post('/api/echo', async (request) => ({ got: request.body }));
  await app.register(receiverPlugin, { sources: { orders: [SECRET] }, inbox });
  try {
    const echo = await app.inject({ method: 'POST', url: '/api/echo', payload: { a: 1 } });
    assert.deepEqual(echo.json(), { got: { a: 1 } });
    const d = delivery();
    const hook = await app.inject({ method: 'POST', url: '/webhooks/orders', headers: d.headers, payload: d.body });
    assert.equal(hook.statusCode, 200, hook.body);
    assert.equal((await inbox.list())[0]?.body, d.body, 'the exact bytes are stored');
  } finally {
    await app.close();
    await inbox.close();
  }
});

test('the node handler uses req.rawBody when a framework already read the body, and refuses a parsed one', async () => {
  const inbox = await openInbox('sqlite::memory:');
  const handler = createWebhookHandler({ sources: { orders: [SECRET] }, inbox });
  // Stands in for Express with a verify hook (rawBody) or express.json() alone (body only).
  const server = createServer((req: IncomingMessage & { rawBody?: Buffer; body?: unknown }, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      req.body = JSON.parse(raw.toString('utf8'));
      if (req.headers['x-keep-raw'] === 'yes') req.rawBody = raw;
      handler(req, res);
    });
  });
  const url = `http://127.0.0.1:${await listenOnLoopback(server)}/webhooks/orders`;
  try {
    const d = delivery();
    const kept = await post(url, d.body, { ...d.headers, 'x-keep-raw': 'yes' });
    expectStatus(kept, 200);
    const parsedOnly = delivery();
    const refused = await post(url, parsedOnly.body, parsedOnly.headers);
    expectStatus(refused, 400);
    assert.match(refused.contentType ?? '', /^application\/problem\+json/);
    assert.deepEqual(
      (await inbox.list()).map((e) => e.eventId),
      [d.eventId],
    );
  } finally {
    server.closeAllConnections();
    await closeWithin(server, 'the Express stand-in');
    await inbox.close();
  }
});

for (const adapter of ['fastify', 'node'] as Adapter[]) {
  test(`a delivery the inbox cannot store gets 500 problem+json from the ${adapter} adapter, without internals`, async () => {
    const inbox = await openInbox('sqlite::memory:');
    const failing: Inbox = Object.assign(Object.create(inbox) as Inbox, {
      record: async () => Promise.reject(new Error('disk I/O error at /secret/path')),
    });
    const receiver = await startAdapter(adapter, { sources: { orders: [SECRET] }, inbox: failing });
    try {
      const d = delivery();
      const answer = await post(`${receiver.url}/webhooks/orders`, d.body, d.headers);
      expectStatus(answer, 500);
      assert.match(answer.contentType ?? '', /^application\/problem\+json/);
      assert.ok(String(answer.json?.type).endsWith('/internal-error'));
      assert.doesNotMatch(JSON.stringify(answer.json), /secret\/path|disk/);
    } finally {
      await receiver.close();
      await inbox.close();
    }
  });
}
