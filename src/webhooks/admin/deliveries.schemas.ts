// The delivery log across all clients (docs/guides/admin-api.md, Delivery log): the owner's delivery
// representation (webhooks.schemas.ts) plus the client that owns it, with the admin's links.
import Type from 'typebox';
import { problemResponse } from '../../http/representation/openapi.ts';
import { NO_CONTROL_CHARACTERS_PATTERN } from '../../http/problems/validation.ts';
import { EVENT_TYPES, OPERATOR_EVENT_TYPES } from '../outbox/events.catalogue.ts';
import { Delivery, DeliveryWithAttempts, RecoverBody, Recovered } from '../api/webhooks.schemas.ts';

const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

const ClientId = Type.String({
  description: 'The client that owns the delivery’s endpoint.',
  examples: ['cl_3f9a2c'],
});

export const AdminDelivery = Type.Object(
  { ...Delivery.properties, ClientId },
  {
    description:
      'A delivery as its owner sees it, plus `ClientId`; `_links` point at the admin routes (self, endpoint, event, redeliver).',
  },
);
const AdminDeliveryWithAttempts = Type.Object(
  { ...DeliveryWithAttempts.properties, ClientId },
  { description: 'One delivery with every attempt: status code, duration, error kind and detail, response excerpt.' },
);

export const DeliveryIdParams = Type.Object({
  id: Type.String({
    pattern: '^dlv_[0-9a-f]{32}$',
    description: 'Delivery id (`dlv_…`), the X-Service-Delivery header value.',
    examples: ['dlv_5d41402abc4b2a76b9719d911017c592'],
  }),
});

export const EndpointIdParams = Type.Object({
  id: Type.String({
    pattern: '^whep_[0-9a-f]{32}$',
    description: 'Endpoint id (`whep_…`).',
    examples: ['whep_7d793037a0760186574b0282f2f435e7'],
  }),
});

const Time = (description: string) => Type.Optional(Type.String({ format: 'date-time', description }));

export const DeliveryListQuery = Type.Object({
  endpoint_id: Type.Optional(
    Type.String({ pattern: '^whep_[0-9a-f]{32}$', description: 'Only this endpoint’s deliveries.' }),
  ),
  client_id: Type.Optional(
    Type.String({
      pattern: NO_CONTROL_CHARACTERS_PATTERN,
      minLength: 1,
      maxLength: 200,
      description: 'Only deliveries to this client’s endpoints.',
      examples: ['cl_3f9a2c'],
    }),
  ),
  event_id: Type.Optional(
    Type.String({ pattern: '^evt_[0-9a-f]{32}$', description: 'Only the deliveries of this event.' }),
  ),
  state: Type.Optional(
    Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')], {
      description: '`pending` (waiting or retrying), `succeeded`, or `failed` (for good).',
    }),
  ),
  event_type: Type.Optional(
    Type.Union(
      [...EVENT_TYPES, ...OPERATOR_EVENT_TYPES].map((t) => Type.Literal(t)),
      { description: 'Only deliveries of events of this type.' },
    ),
  ),
  since: Time('Deliveries created at or after this time (RFC 3339).'),
  until: Time('Deliveries created before this time (RFC 3339).'),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'From `_links.next` of the previous page.' })),
});

export const DeliveryListResponses = {
  200: Type.Object(
    { Items: Type.Array(AdminDelivery), _links: Links },
    { description: 'Newest first; `_links.next` (and `Link: rel="next"`) while older deliveries remain.' },
  ),
};
export const DeliveryResponses = { 200: AdminDeliveryWithAttempts };

const DISABLED = 'The endpoint is disabled: enable it with POST /api/admin/webhook-endpoints/{id}/enable first.';
export const RedeliverResponses = {
  202: AdminDelivery,
  409: problemResponse(`The delivery is already pending, or: ${DISABLED}`),
};
export { RecoverBody };
export const RecoverResponses = { 202: Recovered, 409: problemResponse(DISABLED) };
