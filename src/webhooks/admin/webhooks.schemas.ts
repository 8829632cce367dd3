// The admin API's webhook endpoints across all clients, and one client's delivery counts (docs/guides/admin-api.md,
// Webhook endpoints). The endpoint is the webhook API's own representation plus its owner.
import Type from 'typebox';
import { NO_CONTROL_CHARACTERS_PATTERN } from '../../http/problems/validation.ts';
import { AdminEndpoint } from '../api/webhooks.schemas.ts';

const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });
const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

export const EndpointIdParams = Type.Object({
  id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 64,
    description: 'The endpoint id (`whep_…`).',
  }),
});

export const EndpointListQuery = Type.Object({
  client_id: Type.Optional(
    Type.String({
      pattern: NO_CONTROL_CHARACTERS_PATTERN,
      minLength: 1,
      maxLength: 200,
      description: 'Only this client’s endpoints.',
    }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'From `_links.next` of the previous page.' })),
});

export const StatsQuery = Type.Object({
  client_id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 200,
    description: 'The client whose deliveries are counted.',
  }),
  since: Type.Optional(
    Type.String({ format: 'date-time', description: 'Start of the window (default: 24 h before `until`).' }),
  ),
  until: Type.Optional(
    Type.String({ format: 'date-time', description: 'End of the window, excluded (default: now).' }),
  ),
});

const Count = Type.Integer({ minimum: 0 });

export const Stats = Type.Object({
  ClientId: Type.String(),
  SinceUtc: Timestamp,
  UntilUtc: Timestamp,
  Attempts: Type.Object(
    {
      Succeeded: Count,
      Failed: Type.Record(Type.String(), Count, {
        description:
          'By error kind: timeout, connection, dns, refused_address, tls, redirect, status (a non-2xx answer).',
      }),
    },
    { description: 'Attempts started in the window.' },
  ),
  Deliveries: Type.Object(
    { Pending: Count, Succeeded: Count, Dead: Count },
    {
      description:
        'Deliveries created in the window, by their state now; Dead: failed for good (no retry left, or the endpoint was disabled).',
    },
  ),
});

export const EndpointListResponses = { 200: Type.Object({ Items: Type.Array(AdminEndpoint), _links: Links }) };
export const EndpointResponses = { 200: AdminEndpoint };
export const StatsResponses = { 200: Stats };
