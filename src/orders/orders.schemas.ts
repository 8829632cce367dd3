// One schema per request part: it validates the request, types the handler and feeds the OpenAPI document.
import Type from 'typebox';
import type { Static } from 'typebox';
import { ORDER_STATUSES } from './orders.states.ts';

const Status = Type.Union(ORDER_STATUSES.map((s) => Type.Literal(s)), { description: 'Order state; see the state machine.' });

const CustomerId = Type.String({ format: 'uuid', description: 'GUID of the customer; stored and returned in lower case.' });
const Total = Type.Number({
  minimum: 0,
  exclusiveMaximum: 1_000_000_000_000,
  description: 'Exact decimal amount: at most as many decimals as the currency has minor units (USD 2, JPY 0, KWD 3), below 10^12.',
  examples: [19.99],
});
const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'Active ISO 4217 alphabetic code (upper case).', default: 'USD' });
const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });

const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link, { description: 'HAL-style links allowed in the current state: self, pay, cancel, ship, deliver, track, update, delete.' });

export const OrderIdParams = Type.Object({
  id: Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'Positive integer order id.' }),
});

export const CreateOrderBody = Type.Object({ CustomerId, Total, Currency: Type.Optional(Currency) }, { additionalProperties: false });
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
    UpdatedAtUtc: Type.Optional(Timestamp),
    _links: Type.Optional(Type.Unknown()),
    _embedded: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);
export type ReplaceOrderBody = Static<typeof ReplaceOrderBody>;

export const PatchBody = Type.Unknown({ description: 'application/merge-patch+json (RFC 7396) object or application/json-patch+json (RFC 6902) array.' });

export const StatusChange = Type.Object({ Status, AtUtc: Timestamp });

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

export const OrderList = Type.Object({
  Items: Type.Array(Order),
  _links: Links,
});

const FieldsParam = Type.String({ description: 'Comma list of members to return (Id, CustomerId, Total, Currency, Status, CreatedAtUtc, UpdatedAtUtc, _links). Unknown member → 400.', maxLength: 200 });
const IncludeParam = Type.String({ description: 'Comma list of related data to embed under `_embedded`: `history` (status changes). Unknown → 400.', maxLength: 200 });

export const OrderQuery = Type.Object({ fields: Type.Optional(FieldsParam), include: Type.Optional(IncludeParam) }, { additionalProperties: false });
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

export const ActionParams = Type.Object({
  id: OrderIdParams.properties.id,
  action: Type.Union([Type.Literal('pay'), Type.Literal('cancel'), Type.Literal('ship'), Type.Literal('deliver')]),
});
