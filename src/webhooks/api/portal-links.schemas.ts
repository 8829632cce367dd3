// POST /api/webhooks/portal-links (docs/guides/portal.md, "Portal links"): schemas that validate, type the handler
// and feed the OpenAPI document, with an example of the answer.
import Type from 'typebox';
import { problemResponse } from '../../http/representation/openapi.ts';
import { UUID_PATTERN } from '../../http/problems/validation.ts';

export const PortalLinkBody = Type.Union(
  [
    Type.Object(
      {
        CustomerId: Type.Optional(
          Type.String({
            pattern: UUID_PATTERN,
            description:
              "The customer the link is for (the orders' CustomerId, a UUID; kept in lower case). Its portal shows, changes, tests and rotates only that customer's endpoints, and they receive only events about that customer's orders. Without it the link is for the client's own staff: its portal acts as the whole client.",
          }),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: 'No body (or `{}`): a link for the client\'s own staff. `{"CustomerId": …}`: for one customer.' },
);

const PortalLink = Type.Object(
  {
    Id: Type.String({ description: 'The link’s id (`pl_…`): the audit trail names it; an admin can revoke it.' }),
    Url: Type.String({
      format: 'uri',
      description: 'Opens the integrator portal, for the client or for its customer only. Works once, until ExpiresAt.',
    }),
    ExpiresAt: Type.String({ format: 'date-time', description: 'UTC, RFC 3339: 15 minutes after issue.' }),
    CustomerId: Type.Union([Type.String(), Type.Null()], {
      description: 'The customer the portal is limited to; null: the client’s own staff.',
    }),
  },
  {
    examples: [
      {
        Id: 'pl_5f0c6d1e2a3b4c5d6e7f8091a2b3c4d5',
        Url: 'https://signet.example/console/portal-links/3q2-7wGUdyKpUq6u4VF9c8Y0pQ3lX_nF2bT1rK5aWmE',
        ExpiresAt: '2026-11-24T12:15:00.000Z',
        CustomerId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
      },
    ],
  },
);

export const PortalLinkResponses = {
  201: PortalLink,
  403: problemResponse(
    'The token lacks webhooks:manage, is an end-user token, or is a portal’s own: a portal link is issued by a client for itself.',
  ),
};
