// The event browser across all clients (docs/guides/admin-api.md, Events): the event as /api/events shows
// it, plus who it concerns and how its deliveries stand.
import Type from 'typebox';
import { Event } from '../api/webhooks.schemas.ts';

const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);
const Count = Type.Integer({ minimum: 0 });

export const AdminEvent = Type.Object(
  {
    ...Event.properties,
    ClientId: Type.Union([Type.String(), Type.Null()], {
      description: 'For events about one client’s endpoints (`webhook.*`): that client; null for order events.',
    }),
    OrderId: Type.Union([Type.Integer(), Type.Null()], { description: 'The order an order event is about.' }),
    Deliveries: Type.Object(
      { Pending: Count, Succeeded: Count, Failed: Count },
      {
        description: 'The event’s deliveries by their state now (one per subscribed endpoint).',
        examples: [{ Pending: 0, Succeeded: 2, Failed: 1 }],
      },
    ),
  },
  { description: '`_links.deliveries` lists its deliveries in the admin delivery log.' },
);

export const EventIdParams = Type.Object({
  id: Type.String({
    pattern: '^evt_[0-9a-f]{32}$',
    description: 'Event id (`evt_…`).',
    examples: ['evt_9e107d9d372bb6826bd81d3542a419d6'],
  }),
});

export const EventListQuery = Type.Object({
  type: Type.Optional(
    Type.String({
      maxLength: 2000,
      description: 'Comma-separated event types to include (`*` for all).',
      examples: ['order.created,order.cancelled'],
    }),
  ),
  order_id: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 2147483647, description: 'Only the events of this order.', examples: [42] }),
  ),
  since: Type.Optional(
    Type.String({ format: 'date-time', description: 'Events that occurred at or after this time.' }),
  ),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Events that occurred before this time.' })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'From `_links.next` of the previous page.' })),
});

export const EventListResponses = {
  200: Type.Object(
    { Items: Type.Array(AdminEvent), _links: Links },
    { description: 'Newest first; `_links.next` (and `Link: rel="next"`) while older events remain.' },
  ),
};
export const EventResponses = { 200: AdminEvent };
