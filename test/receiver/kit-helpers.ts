// Shared pieces of the receiver kit's tests: signed deliveries shaped like the producer's, the kit
// mounted on real HTTP servers (Fastify plugin and node:http handler), and a recording event handler.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import {
  createWebhookHandler,
  receiverPlugin,
  signBody,
  type IntakeOptions,
  type InboxWorker,
  type ReceivedEvent,
} from '../../src/receiver/index.ts';

export const SECRET = 'whsec_receiver-kit-test-secret';

export interface Delivery {
  body: string;
  headers: Record<string, string>;
  eventId: string;
  deliveryId: string;
}

/** A delivery exactly as the producer sends it: compact JSON body, then the three X-Service-* headers. */
export function delivery(
  options: {
    secret?: string;
    eventId?: string;
    deliveryId?: string;
    type?: string;
    timestamp?: Date;
    data?: unknown;
  } = {},
): Delivery {
  const eventId = options.eventId ?? `evt_${randomUUID()}`;
  const deliveryId = options.deliveryId ?? `dlv_${randomUUID()}`;
  const type = options.type ?? 'order.created';
  const timestamp = new Date(Math.floor((options.timestamp ?? new Date()).getTime() / 1000) * 1000).toISOString();
  const body = JSON.stringify({
    Id: eventId,
    Type: type,
    OccurredAtUtc: '2026-11-02T10:00:00.000Z',
    Timestamp: timestamp,
    Data: options.data ?? { OrderId: 1 },
  });
  return {
    body,
    eventId,
    deliveryId,
    headers: {
      'content-type': 'application/json',
      'x-service-signature-256': signBody(body, options.secret ?? SECRET),
      'x-service-delivery': deliveryId,
      'x-service-event': type,
    },
  };
}

export interface Answer {
  status: number;
  contentType: string | null;
  json: Record<string, unknown> | undefined;
}

export async function post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
  };
}

export interface RunningReceiver {
  url: string;
  close(): Promise<void>;
}

export type Adapter = 'fastify' | 'node';

export async function startAdapter(
  adapter: Adapter,
  options: IntakeOptions & { worker?: InboxWorker },
): Promise<RunningReceiver> {
  if (adapter === 'fastify') {
    const app = Fastify({ logger: false });
    await app.register(receiverPlugin, options);
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
  }
  const server = createServer(createWebhookHandler(options));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An event handler that remembers every event it was given. */
export function recordingHandler(): {
  events: ReceivedEvent[];
  handler: (event: ReceivedEvent) => void;
  count(id: string): number;
} {
  const events: ReceivedEvent[] = [];
  return {
    events,
    handler: (event) => void events.push(event),
    count: (id) => events.filter((e) => e.id === id).length,
  };
}
