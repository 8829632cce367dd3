// Request and response schemas of the webhook API: they validate, type the handlers and feed the OpenAPI document.
import Type from 'typebox';
import type { Static } from 'typebox';
import { problemResponse } from '../../http/representation/openapi.ts';
import { EVENT_DESCRIPTIONS, EVENT_TYPES } from '../outbox/events.catalogue.ts';

const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

const eventTypeList = EVENT_TYPES.map((t) => `\`${t}\`: ${EVENT_DESCRIPTIONS[t]}`).join('\n');
const EventTypeName = Type.String({
  minLength: 1,
  maxLength: 100,
  description: `An event type, or \`*\` for all of them:\n${eventTypeList}`,
});

export const EndpointIdParams = Type.Object({
  id: Type.String({ pattern: '^whep_[0-9a-f]{32}$', description: 'Endpoint id (`whep_…`).' }),
});
/** A delivery id (also checked inside the deliveries cursor). */
export const DELIVERY_ID = '^dlv_[0-9a-f]{32}$';
export const DeliveryIdParams = Type.Object({
  id: Type.String({ pattern: DELIVERY_ID, description: 'Delivery id (`dlv_…`), the X-Service-Delivery header value.' }),
});
export const EventIdParams = Type.Object({
  id: Type.String({ pattern: '^evt_[0-9a-f]{32}$', description: 'Event id (`evt_…`).' }),
});

export const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'Callback URL: https (http only in development mode); public addresses only unless the operator allows a network. No spaces, control characters, credentials or fragment; stored (and shown) as the URL parser serialises it, e.g. `https://example.com` as `https://example.com/`.',
});
const Events = Type.Array(EventTypeName, {
  minItems: 1,
  maxItems: 50,
  description: 'Event types to receive, or `["*"]` for every type.',
});
export const Description = Type.String({ maxLength: 500, description: 'A label of one line: no control characters.' });
export const Secret = Type.String({
  minLength: 1,
  maxLength: 200,
  description: '`whsec_` + base64 of 24–64 random bytes. Omit it to have one generated.',
});

export const CreateEndpointBody = Type.Object(
  { Url, Events, Description: Type.Optional(Description), Secret: Type.Optional(Secret) },
  { additionalProperties: false },
);
export type CreateEndpointBody = Static<typeof CreateEndpointBody>;

export const PatchEndpointBody = Type.Object(
  {
    Url: Type.Optional(Url),
    Events: Type.Optional(Events),
    Description: Type.Optional(Type.Union([Description, Type.Null()])),
    Enabled: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'JSON Merge Patch (RFC 7396) of the members that can change.',
  },
);
export type PatchEndpointBody = Static<typeof PatchEndpointBody>;

export const RotateSecretBody = Type.Union([
  Type.Object({ Secret: Type.Optional(Secret) }, { additionalProperties: false }),
  Type.Null(),
]);

const endpointMembers = {
  Id: Type.String(),
  Url: Type.String(),
  Events: Type.Array(Type.String()),
  Description: Type.String(),
  Enabled: Type.Boolean(),
  DisabledReason: Type.Union(
    [Type.Literal('manual'), Type.Literal('admin'), Type.Literal('gone'), Type.Literal('failing'), Type.Null()],
    {
      description:
        'Why it is disabled: by its owner (`manual`), by a Signet administrator (`admin`), after answering 410 Gone, or after failing for WEBHOOK_DISABLE_AFTER.',
    },
  ),
  FailingSinceUtc: NullableTimestamp,
  PreviousSecretExpiresAtUtc: Type.Union([Timestamp, Type.Null()], {
    description: 'Until then, the previous secret still signs too (after a rotation).',
  }),
  CreatedAtUtc: Timestamp,
  UpdatedAtUtc: Timestamp,
  CustomerId: Type.Union([Type.String(), Type.Null()], {
    description:
      "The client's customer the endpoint belongs to (made in that customer's portal, docs/guides/portal.md): it receives only events about that customer's orders. Null: the client's own endpoint.",
  }),
  _links: Links,
};
export const Endpoint = Type.Object(endpointMembers);
/** An endpoint as the admin API shows it (docs/guides/admin-api.md): with the client that owns it. */
export const AdminEndpoint = Type.Object({
  ...endpointMembers,
  ClientId: Type.String({
    description:
      'The client that registered the endpoint; `signet:audit` for one an admin registered for operator events.',
  }),
});
const CreatedEndpoint = Type.Object({
  ...endpointMembers,
  Secret: Type.String({ description: 'Shown only now: store it to verify signatures.' }),
});
const EndpointList = Type.Object({ Items: Type.Array(Endpoint), _links: Links });
export const RotatedSecret = Type.Object({ Secret: Type.String(), PreviousSecretExpiresAtUtc: Timestamp });

const deliveryMembers = {
  Id: Type.String(),
  EventId: Type.String(),
  EventType: Type.String(),
  EndpointId: Type.String(),
  State: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
  AttemptCount: Type.Integer(),
  NextAttemptAtUtc: NullableTimestamp,
  LastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
  LastError: Type.Union([Type.String(), Type.Null()]),
  CreatedAtUtc: Timestamp,
  UpdatedAtUtc: Timestamp,
  _links: Links,
};
export const Delivery = Type.Object(deliveryMembers);
export const Attempt = Type.Object({
  Attempt: Type.Integer(),
  StartedAtUtc: Timestamp,
  DurationMs: Type.Integer(),
  StatusCode: Type.Union([Type.Integer(), Type.Null()]),
  ErrorKind: Type.Union([
    Type.String({ description: 'timeout, connection, dns, refused_address, tls, redirect or status' }),
    Type.Null(),
  ]),
  ErrorDetail: Type.Union([Type.String(), Type.Null()]),
  ResponseExcerpt: Type.Union([Type.String({ description: 'The first 4 KiB of the response body.' }), Type.Null()]),
});
export const DeliveryWithAttempts = Type.Object({ ...deliveryMembers, Attempts: Type.Array(Attempt) });
const DeliveryList = Type.Object({ Items: Type.Array(Delivery), _links: Links });
export const DeliveryListQuery = Type.Object({
  State: Type.Optional(deliveryMembers.State),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});
export const TestEventBody = Type.Object(
  {
    Type: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'An event type of the catalogue (not `*`); the endpoint need not subscribe to it.',
    }),
  },
  { additionalProperties: false },
);
export const RecoverBody = Type.Object({ Since: Timestamp }, { additionalProperties: false });
export const Recovered = Type.Object({
  Requeued: Type.Integer({ description: 'Failed deliveries created since then, queued again.' }),
});

export const Event = Type.Object({
  Id: Type.String(),
  Type: Type.String({ description: eventTypeList }),
  OccurredAtUtc: Timestamp,
  Data: Type.Unknown({
    description: 'Order events: the order as GET /api/orders/{id} shows it. webhook.*: see the type list.',
  }),
  _links: Links,
});
const EventList = Type.Object({
  Items: Type.Array(Event),
  NextCursor: Type.String({
    description: 'Position after the last item: pass it as `after` to continue, now or later (store it between polls).',
  }),
  _links: Links,
});
export const EventListQuery = Type.Object({
  after: Type.Optional(
    Type.String({
      maxLength: 512,
      description: 'NextCursor of an earlier page; omitted: from the oldest retained event.',
    }),
  ),
  type: Type.Optional(Type.String({ maxLength: 2000, description: 'Comma-separated event types to include.' })),
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
});

// Responses by status, beside those every operation shares (src/http/representation/openapi.ts). Fastify serializes
// the 2xx bodies with these schemas; problems are sent as text and only documented here.
const DISABLED = 'The endpoint is disabled: enable it with PATCH {"Enabled": true} first.';
const NO_CONTENT = { type: 'null', description: 'Deleted' };

export const CreateEndpointResponses = {
  201: CreatedEndpoint,
  409: problemResponse('The caller has as many endpoints as it may register (`limit-reached`).'),
};
export const EndpointListResponses = { 200: EndpointList };
export const EndpointResponses = { 200: Endpoint };
export const DeleteEndpointResponses = { 204: NO_CONTENT };
export const PingResponses = { 202: Delivery, 409: problemResponse(DISABLED) };
export const TestEventResponses = {
  202: Delivery,
  409: problemResponse(DISABLED),
  422: problemResponse('`Type` is not an event type of the catalogue (pointer `/Type`).'),
};
export const RotateSecretResponses = {
  200: RotatedSecret,
  409: problemResponse('A rotation’s overlap is still running (both secrets sign until it ends).'),
};
export const RecoverResponses = { 202: Recovered, 409: problemResponse(DISABLED) };
export const DeliveryListResponses = { 200: DeliveryList };
export const DeliveryResponses = { 200: DeliveryWithAttempts };
export const RedeliverResponses = {
  202: Delivery,
  409: problemResponse(`The delivery is already pending, or: ${DISABLED}`),
};
export const EventListResponses = { 200: EventList };
export const EventResponses = { 200: Event };
