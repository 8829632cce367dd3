// One schema per request part: it validates the request, types the handler and feeds the OpenAPI document.
import Type from 'typebox';
import type { Static } from 'typebox';
import { problemResponse, problemWith } from '../http/representation/openapi.ts';
import { UUID_PATTERN } from '../http/problems/validation.ts';
import { ORDER_STATUSES, type OrderStatus } from './orders.states.ts';

// An enum, not a union of literals: ajv reports a union (anyOf) with one "must be equal to constant" per
// member, an enum with one error that can name the allowed values (orders.validation.ts).
const Status = Type.Unsafe<OrderStatus>({
  type: 'string',
  enum: [...ORDER_STATUSES],
  description: 'Order state; see the state machine.',
});

const CustomerId = Type.String({
  pattern: UUID_PATTERN,
  description: 'UUID (GUID) of the customer, 8-4-4-4-12 hex digits; stored and returned in lower case.',
});
const Total = Type.Number({
  minimum: 0,
  exclusiveMaximum: 1_000_000_000_000,
  description:
    'Exact decimal amount: at most as many decimals as the currency has minor units (USD 2, JPY 0, KWD 3), below 10^12.',
  examples: [19.99],
});
const CURRENCY = { pattern: '^[A-Z]{3}$', description: 'Active ISO 4217 alphabetic code (upper case).' };
const Currency = Type.String(CURRENCY);
const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });

const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link, {
  description: 'HAL-style links allowed in the current state: self, pay, cancel, ship, deliver, track, update, delete.',
});

export const OrderIdParams = Type.Object({
  id: Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'Positive integer order id.' }),
});

// Only a new order defaults to USD. Validation runs with useDefaults, so a default on the shared schema
// made a PUT without Currency, a merge patch {"Currency":null} or a JSON Patch remove switch the order to USD.
export const CreateOrderBody = Type.Object(
  { CustomerId, Total, Currency: Type.Optional(Type.String({ ...CURRENCY, default: 'USD' })) },
  { additionalProperties: false },
);
export type CreateOrderBody = Static<typeof CreateOrderBody>;

/**
 * PUT takes the full representation a GET returned, modified. Read-only members may be sent back
 * unchanged (a different Id or CreatedAtUtc is 422, a different Status is 422: use the actions or PATCH);
 * UpdatedAtUtc and the links/embedded members are ignored.
 */
export const ReplaceOrderBody = Type.Object(
  {
    Id: Type.Optional(Type.Integer({ minimum: 1 })),
    CustomerId,
    Total,
    Currency,
    Status: Type.Optional(Status),
    CreatedAtUtc: Type.Optional(Timestamp),
    // Ignored whatever its value (docs/guides/calling-the-api.md, PUT), like the links: a client sends back what it
    // got.
    UpdatedAtUtc: Type.Optional(Type.Unknown({ description: 'Ignored.' })),
    _links: Type.Optional(Type.Unknown()),
    _embedded: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);
export type ReplaceOrderBody = Static<typeof ReplaceOrderBody>;

const MergePatch = Type.Object(
  {
    CustomerId: Type.Optional(CustomerId),
    Total: Type.Optional(Total),
    Currency: Type.Optional(Currency),
    Status: Type.Optional(Status),
  },
  {
    description:
      'JSON Merge Patch (RFC 7396): the members to change; a Status change is a transition. null removes a member (removing CustomerId, Total or Currency is 422). The patched order is validated like a PUT body.',
  },
);

const JsonPatch = Type.Array(
  Type.Object({
    op: Type.Unsafe<string>({ type: 'string', enum: ['add', 'remove', 'replace', 'move', 'copy', 'test'] }),
    path: Type.String({ description: 'JSON Pointer (RFC 6901) into the order, e.g. /Total.' }),
    from: Type.Optional(Type.String({ description: 'move, copy: JSON Pointer of the source.' })),
    value: Type.Optional(Type.Unknown({ description: 'add, replace, test.' })),
  }),
  {
    description:
      'JSON Patch (RFC 6902), atomic: a failing operation or `test` applies nothing (409). The patched order is validated like a PUT body.',
  },
);

/**
 * PATCH bodies by media type (RFC 5789). They describe the documents in the OpenAPI document only: the
 * patch code checks them (orders.patch-documents.ts), answering a malformed patch with 400 invalid-patch
 * (RFC 5789 §2.2) where schema validation would say 422, so the route does not validate them.
 */
export const PatchBody = {
  content: {
    'application/merge-patch+json': { schema: MergePatch },
    'application/json-patch+json': { schema: JsonPatch },
  },
};

const StatusChange = Type.Object({ Status, AtUtc: Timestamp });

export const Order = Type.Object(
  {
    Id: Type.Optional(Type.Integer()),
    CustomerId: Type.Optional(CustomerId),
    Total: Type.Optional(Type.Number()),
    Currency: Type.Optional(Type.String()),
    Status: Type.Optional(Status),
    CreatedAtUtc: Type.Optional(Timestamp),
    UpdatedAtUtc: Type.Optional(Timestamp),
    _links: Type.Optional(Links),
    _embedded: Type.Optional(Type.Object({ history: Type.Optional(Type.Array(StatusChange)) })),
  },
  { description: 'Members are all present unless `fields` selected some.' },
);

const OrderList = Type.Object({
  Items: Type.Array(Order),
  _links: Links,
});

const FieldsParam = Type.String({
  description:
    'Comma list of members to return (Id, CustomerId, Total, Currency, Status, CreatedAtUtc, UpdatedAtUtc, _links). Unknown member → 400.',
  maxLength: 200,
});
const IncludeParam = Type.String({
  description: 'Comma list of related data to embed under `_embedded`: `history` (status changes). Unknown → 400.',
  maxLength: 200,
});

export const OrderQuery = Type.Object(
  { fields: Type.Optional(FieldsParam), include: Type.Optional(IncludeParam) },
  { additionalProperties: false },
);
export type OrderQuery = Static<typeof OrderQuery>;

export const ListQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
    cursor: Type.Optional(Type.String({ maxLength: 512, description: 'Opaque cursor from the `next` link.' })),
    Status: Type.Optional(Status),
    CustomerId: Type.Optional(CustomerId),
    fields: Type.Optional(FieldsParam),
    include: Type.Optional(IncludeParam),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

// Request headers the order routes read, declared so the OpenAPI document lists them. Their values are
// parsed where they are used (idempotency.ts, conditional.ts, orders.responses.ts), with the errors those
// give, so here they are only strings.
const IdempotencyKey = Type.String({
  description:
    '1–255 visible ASCII characters: a retry with the same key and body gets the stored response (Idempotent-Replayed: true).',
});
const IfMatch = Type.String({
  description:
    'ETag(s) of the version the request is for, or *; 412 when none is current (RFC 9110 §13.1.1). Ignored when the answer would be 404 or 409.',
});
const IfNoneMatch = Type.String({
  description: 'ETag(s) or *; when one is current: 304 for GET/HEAD, 412 for a write (RFC 9110 §13.1.2).',
});
const IfModifiedSince = Type.String({
  description: 'HTTP-date; 304 when the order has not changed since (RFC 9110 §13.1.3). Ignored with If-None-Match.',
});
const IfUnmodifiedSince = Type.String({
  description: 'HTTP-date; 412 when the order changed since (RFC 9110 §13.1.4). Ignored with If-Match.',
});
const Prefer = Type.String({ description: '`return=minimal`: 204 with ETag and Last-Modified, no body (RFC 7240).' });

const writeConditions = {
  'If-Match': Type.Optional(IfMatch),
  'If-None-Match': Type.Optional(IfNoneMatch),
  'If-Unmodified-Since': Type.Optional(IfUnmodifiedSince),
};
export const CreateHeaders = Type.Object({ 'Idempotency-Key': Type.Optional(IdempotencyKey) });
export const ReadHeaders = Type.Object({ ...writeConditions, 'If-Modified-Since': Type.Optional(IfModifiedSince) });
export const ReplaceHeaders = Type.Object({ ...writeConditions, Prefer: Type.Optional(Prefer) });
export const DeleteHeaders = Type.Object(writeConditions);
export const ActionHeaders = Type.Object({ ...writeConditions, 'Idempotency-Key': Type.Optional(IdempotencyKey) });

// Responses by status, beside those every operation shares (src/http/representation/openapi.ts). The problem ones are
// documentation only: problems are sent as text, so Fastify never serializes with their schemas.
const NOT_MODIFIED = {
  type: 'null',
  description:
    'Not Modified: the client’s copy is current (If-None-Match / If-Modified-Since). No body; ETag, Last-Modified, Cache-Control and Vary as a 200 would have them (RFC 9110 §15.4.5).',
};
const MINIMAL = {
  type: 'null',
  description:
    '`Prefer: return=minimal`: no body; ETag and Last-Modified of the new version, Preference-Applied (RFC 7240 §4.2).',
};
const PRECONDITION_FAILED = problemResponse(
  'A precondition failed (If-Match, If-Unmodified-Since, or If-None-Match on a write; RFC 9110 §13.1); carries the current ETag on writes.',
);
const IDEMPOTENCY_CONFLICT =
  'The Idempotency-Key was used with a different request, or its first request is still in flight (Retry-After).';
const STATE_CONFLICT = problemWith({ currentStatus: Status });

export const CreateResponses = {
  201: Order,
  409: problemResponse(IDEMPOTENCY_CONFLICT),
};
export const ReadResponses = { 200: Order, 304: NOT_MODIFIED, 412: PRECONDITION_FAILED };
export const ListResponses = { 200: OrderList };
export const ReplaceResponses = {
  200: Order,
  204: MINIMAL,
  409: problemResponse('Only a pending order can change (`currentStatus` says what it is).', STATE_CONFLICT),
  412: PRECONDITION_FAILED,
};
export const PatchResponses = {
  200: Order,
  204: MINIMAL,
  400: problemResponse('Malformed request, or a malformed patch document (`invalid-patch`, RFC 5789 §2.2).'),
  409: problemResponse(
    'The change is not allowed in the current state, or the status transition is not (`currentStatus` says what it is), or a JSON Patch operation cannot apply.',
    STATE_CONFLICT,
  ),
  412: PRECONDITION_FAILED,
};
export const DeleteResponses = {
  204: { type: 'null', description: 'Deleted' },
  409: problemResponse('Only pending and cancelled orders can be deleted.', STATE_CONFLICT),
  412: PRECONDITION_FAILED,
};
export const ActionResponses = {
  200: Order,
  409: problemResponse(`The current state does not allow this transition; or: ${IDEMPOTENCY_CONFLICT}`, STATE_CONFLICT),
  412: PRECONDITION_FAILED,
};
