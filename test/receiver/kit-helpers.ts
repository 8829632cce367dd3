// Shared pieces of the receiver kit's tests: signed deliveries shaped like the producer's, the kit
// mounted on real HTTP servers (Fastify plugin and node:http handler), and a recording event handler.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { closeWithin, listenOnLoopback, withDeadline } from '../helpers/deadline.ts';
import { fetchWithin } from '../helpers/http.ts';
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
    /** The Timestamp text as an older producer sent it (whole seconds), or any text at all. */
    timestampText?: string;
    data?: unknown;
  } = {},
): Delivery {
  const eventId = options.eventId ?? `evt_${randomUUID()}`;
  const deliveryId = options.deliveryId ?? `dlv_${randomUUID()}`;
  const type = options.type ?? 'order.created';
  // ISO 8601 with milliseconds, as the producer sends it (docs/guides/producing-webhooks.md, "What a delivery looks
  // like").
  const timestamp = options.timestampText ?? (options.timestamp ?? new Date()).toISOString();
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
  /** The body as received, so that a failed status assertion shows it. */
  text: string;
  json: Record<string, unknown> | undefined;
}

/**
 * The JSON of an answer's (or a command's) text, undefined for none. Text that is not JSON fails naming
 * `what` and showing the text, where a bare JSON.parse would only say "Unexpected token".
 */
export function parseJsonText(text: string, what: string): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    const shown = text.length > 2000 ? `${text.slice(0, 2000)}… (${text.length} characters)` : text;
    throw new Error(`${what}: not JSON (${(err as Error).message}): ${shown}`, { cause: err });
  }
}

/** A POST through fetch, with fetchWithin's deadline on the whole answer, body included. */
export async function post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<Answer> {
  const response = await fetchWithin(url, { method: 'POST', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    text,
    json: parseJsonText(text, `POST ${url} answered ${response.status}`),
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
    await withDeadline(app.listen({ port: 0, host: '127.0.0.1' }), 10_000, 'the Fastify receiver listening');
    return {
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      close: () => withDeadline(app.close(), 10_000, 'closing the Fastify receiver'),
    };
  }
  const server = createServer(createWebhookHandler(options));
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return closeWithin(server, 'the node:http receiver');
    },
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
