// A real HTTP receiver on 127.0.0.1:0 that records every delivery (raw body bytes and headers) and
// answers as the test tells it: a status, a hang (for timeouts) or a connection reset.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { closeWithin, listenOnLoopback, waitUntil } from './deadline.ts';
import { call, type CallResult } from './http.ts';
import type { TestServer } from './server.ts';

export interface ReceivedDelivery {
  /** The request target (path and query). */
  url: string;
  headers: IncomingHttpHeaders;
  /** The exact bytes received, as UTF-8 text. */
  body: string;
  receivedAt: number;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang' | 'reset';

export interface TestReceiver {
  url: string;
  received: ReceivedDelivery[];
  /** Decides each answer, possibly later; `index` counts requests from 0. Default: 200. */
  answer: (request: IncomingMessage, index: number) => Answer | Promise<Answer>;
  /** Resolves once `count` deliveries have arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<TestReceiver> {
  const sockets = new Set<Socket>();
  const hanging = new Set<() => void>();
  const receiver: TestReceiver = {
    url: '',
    received: [],
    answer: () => ({ status: 200 }),
    waitFor: (count, timeoutMs = 10_000) =>
      waitUntil(
        () => receiver.received.length >= count,
        timeoutMs,
        () => `expected ${count} deliveries, got ${receiver.received.length}`,
      ).then(() => receiver.received),
    close: async () => {
      for (const release of hanging) release();
      for (const socket of sockets) socket.destroy();
      await closeWithin(server, () => `the test receiver at ${receiver.url} (${sockets.size} sockets)`);
    },
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const index = receiver.received.length;
      receiver.received.push({
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      });
      const answer = await receiver.answer(request, index);
      if (answer === 'reset') return request.socket.destroy();
      if (answer === 'hang') return void hanging.add(() => response.destroy());
      response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  receiver.url = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  return receiver;
}

// Re-exported: the suite's tests import the poller from here.
export { waitUntil };

/** Settings for a server whose callbacks go to a local receiver over http, with a compressed retry schedule. */
export const LOCAL_WEBHOOKS_ENV = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWED_NETWORKS: 'loopback',
  WEBHOOK_RETRY_SCHEDULE: '0s,200ms,400ms',
  WEBHOOK_POLL_INTERVAL: '100ms',
};

export const WEBHOOK_SCOPES = 'orders:read orders:write webhooks:manage events:read';

export async function registerEndpoint(
  server: Pick<TestServer, 'url'>,
  token: string,
  url: string,
  events: string[] = ['*'],
  extra: Record<string, unknown> = {},
): Promise<CallResult> {
  const result = await call(server.url, 'POST', '/api/webhooks', {
    token,
    body: { Url: url, Events: events, ...extra },
  });
  if (result.status !== 201) throw new Error(`registering ${url} failed: ${result.status} ${result.text}`);
  return result;
}
