// Each event type's Data: its JSON Schema and an example, written once. The OpenAPI document's `webhooks`
// section shows them (webhooks.openapi.ts), and a test event (POST /api/webhooks/{id}/test-events) sends
// the example as its Data, so what the catalogue shows is exactly what a receiver gets.
// Typed by EventType: a type added to the catalogue without its Data here does not compile.
import type { EventType } from './events.catalogue.ts';

/** JSON Schema (2020-12, as OpenAPI 3.1 uses it) of one event type's Data. */
type JsonSchema = Record<string, unknown>;

const text = (description: string): JsonSchema => ({ type: 'string', description });
const time = (description: string): JsonSchema => ({ type: 'string', format: 'date-time', description });
const link = { type: 'object', properties: { href: { type: 'string', format: 'uri' }, method: { type: 'string' } } };

const orderMembers: Record<string, JsonSchema> = {
  Id: { type: 'integer', description: 'The order id (examples use 0, which no real order has).' },
  CustomerId: text('The customer (the `sub` of the user who placed it).'),
  Total: { type: 'number', description: 'In major units of Currency.' },
  Currency: text('ISO 4217 code.'),
  Status: { type: 'string', enum: ['pending', 'paid', 'cancelled', 'shipped', 'delivered'], description: 'Status.' },
  CreatedAtUtc: time('When the order was created.'),
  UpdatedAtUtc: time('When it last changed.'),
};
const ORDER_REQUIRED = Object.keys(orderMembers);

function orderSchema(withLinks: boolean): JsonSchema {
  const properties = withLinks
    ? {
        ...orderMembers,
        _links: {
          type: 'object',
          additionalProperties: link,
          description: 'The actions the order allows now, as in GET /api/orders/{id}.',
        },
      }
    : orderMembers;
  return {
    type: 'object',
    description: withLinks ? 'The order as GET /api/orders/{id} shows it.' : 'The order as it was, without links.',
    required: withLinks ? [...ORDER_REQUIRED, '_links'] : ORDER_REQUIRED,
    properties,
  };
}

const EXAMPLE_BASE = 'https://signet.example/api/orders/0';
const EXAMPLE_CREATED = '2026-01-15T09:30:00.000Z';
const EXAMPLE_CHANGED = '2026-01-15T09:45:00.000Z';
const EXAMPLE_ENDPOINT = { EndpointId: 'whep_00000000000000000000000000000000', Url: 'https://receiver.example/hooks' };

function orderExample(status: string, links: string[], withLinks = true): Record<string, unknown> {
  const order: Record<string, unknown> = {
    Id: 0,
    CustomerId: 'customer-example',
    Total: 42.5,
    Currency: 'EUR',
    Status: status,
    CreatedAtUtc: EXAMPLE_CREATED,
    UpdatedAtUtc: status === 'pending' ? EXAMPLE_CREATED : EXAMPLE_CHANGED,
  };
  if (!withLinks) return order;
  const all: Record<string, { href: string; method: string }> = {
    self: { href: EXAMPLE_BASE, method: 'GET' },
    pay: { href: `${EXAMPLE_BASE}/pay`, method: 'POST' },
    cancel: { href: `${EXAMPLE_BASE}/cancel`, method: 'POST' },
    ship: { href: `${EXAMPLE_BASE}/ship`, method: 'POST' },
    deliver: { href: `${EXAMPLE_BASE}/deliver`, method: 'POST' },
    update: { href: EXAMPLE_BASE, method: 'PUT' },
    delete: { href: EXAMPLE_BASE, method: 'DELETE' },
    track: { href: `${EXAMPLE_BASE}?include=history`, method: 'GET' },
  };
  order._links = Object.fromEntries(['self', ...links].map((name) => [name, all[name]]));
  return order;
}

const endpointMembers = {
  EndpointId: text('The endpoint (`whep_…`).'),
  Url: { type: 'string', format: 'uri', description: 'Its callback URL.' },
};

interface EventDataSpec {
  schema: JsonSchema;
  example: Record<string, unknown>;
}

const PENDING_LINKS = ['pay', 'cancel', 'update', 'delete'];

export const EVENT_DATA: Record<EventType, EventDataSpec> = {
  'order.created': { schema: orderSchema(true), example: orderExample('pending', PENDING_LINKS) },
  'order.updated': { schema: orderSchema(true), example: orderExample('pending', PENDING_LINKS) },
  'order.paid': { schema: orderSchema(true), example: orderExample('paid', ['ship', 'track']) },
  'order.cancelled': { schema: orderSchema(true), example: orderExample('cancelled', ['delete']) },
  'order.shipped': { schema: orderSchema(true), example: orderExample('shipped', ['deliver', 'track']) },
  'order.delivered': { schema: orderSchema(true), example: orderExample('delivered', ['track']) },
  'order.deleted': { schema: orderSchema(false), example: orderExample('cancelled', [], false) },
  'webhook.ping': {
    schema: { type: 'object', required: ['EndpointId', 'Url'], properties: endpointMembers },
    example: { ...EXAMPLE_ENDPOINT },
  },
  'webhook.endpoint.disabled': {
    schema: {
      type: 'object',
      required: ['EndpointId', 'Url', 'Reason', 'FailingSinceUtc'],
      properties: {
        ...endpointMembers,
        Reason: { type: 'string', enum: ['gone', 'failing'], description: 'It answered 410 Gone, or kept failing.' },
        FailingSinceUtc: time('Since when every attempt failed.'),
      },
    },
    example: { ...EXAMPLE_ENDPOINT, Reason: 'failing', FailingSinceUtc: EXAMPLE_CREATED },
  },
};
