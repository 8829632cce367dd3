// Every event type Signet emits, with what it means. Kinds and payloads are ours, documented in the
// docs/reference/events.md and the OpenAPI document.
import { randomHex } from './random-hex.ts';

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

/**
 * Operator events go only to endpoints an admin registers (owned by OPERATOR_OWNER), never to a client's, whatever
 * it subscribes to: a client's `*` does not include them, and no client's event feed lists them.
 */
export const OPERATOR_EVENT_DESCRIPTIONS = {
  'audit.entry':
    'An entry was appended to the audit trail (Data: the entry as GET /api/admin/audit shows it, with Seq, Hash and PreviousHash of the chain).',
} as const;

export type OperatorEventType = keyof typeof OPERATOR_EVENT_DESCRIPTIONS;
export const OPERATOR_EVENT_TYPES = Object.keys(OPERATOR_EVENT_DESCRIPTIONS) as OperatorEventType[];
/** What the outbox records: the clients' catalogue and the operator events. */
export type OutboxEventType = EventType | OperatorEventType;

/**
 * The owner of the endpoints an admin registers for operator events (docs/security.md, "Streaming the audit
 * trail"). No client can have this id: the authorization server gives out `cl_…` ids, and a colon has no place there.
 */
export const OPERATOR_OWNER = 'signet:audit';

export function isOperatorEventType(value: string): value is OperatorEventType {
  return Object.hasOwn(OPERATOR_EVENT_DESCRIPTIONS, value);
}

/** Subscribing to this receives every type, including ones added later. */
export const ALL_EVENTS = '*';

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_DESCRIPTIONS, value);
}

/**
 * Opaque prefixed ids (`evt_…`, `dlv_…`, `whep_…`), 32 lower-case hex digits: the creation time in Unix
 * milliseconds (48 bits, as UUIDv7 lays it out: RFC 9562 §5.7), then 80 random bits. Time first puts each
 * new id at the right-hand end of its unique index, so a group commit dirties a few index pages rather
 * than one per row (docs/benchmarks-history.md, "Time-ordered ids"); 80 random bits keep ids unguessable and
 * unique. An id's order says nothing more than its row's created_at already does.
 */
export function newId(prefix: 'evt' | 'dlv' | 'whep', now = Date.now()): string {
  return `${prefix}_${idTimePart(now)}${randomHex(10)}`;
}

/** The first 12 hex digits of a newId made at `now`: its time part. */
export function idTimePart(now = Date.now()): string {
  return now.toString(16).padStart(12, '0');
}
