// Every event type Signet emits, with what it means. Kinds and payloads are ours, documented in the
// README ("Events") and the OpenAPI document.
import { randomBytes } from 'node:crypto';

export const EVENT_DESCRIPTIONS = {
  'order.created': 'An order was created (Data: the order, Status pending).',
  'order.updated': 'CustomerId, Total or Currency of a pending order changed (Data: the order after the change).',
  'order.paid': 'A pending order was paid (Data: the order, Status paid).',
  'order.cancelled': 'A pending order was cancelled.',
  'order.shipped': 'A paid order was shipped.',
  'order.delivered': 'A shipped order was delivered.',
  'order.deleted': 'A pending or cancelled order was deleted (Data: the order as it was, without links).',
  'webhook.ping': 'Sent by POST /api/webhooks/{id}/ping to that endpoint only (Data: EndpointId, Url).',
  'webhook.endpoint.disabled':
    "One of the client's endpoints was disabled after failing (Data: EndpointId, Url, Reason, FailingSinceUtc).",
} as const;

export type EventType = keyof typeof EVENT_DESCRIPTIONS;
export const EVENT_TYPES = Object.keys(EVENT_DESCRIPTIONS) as EventType[];

/** Subscribing to this receives every type, including ones added later. */
export const ALL_EVENTS = '*';

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_DESCRIPTIONS, value);
}

/** Opaque prefixed ids (`evt_…`, `dlv_…`, `whep_…`): 128 random bits, lower-case hex. */
export function newId(prefix: 'evt' | 'dlv' | 'whep'): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`;
}
