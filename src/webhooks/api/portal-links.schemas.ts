// POST /api/webhooks/portal-links (docs/guides/portal.md, "Portal links"): schemas that validate, type the handler
// and feed the OpenAPI document, with an example of the answer.
import Type from 'typebox';
import { problemResponse } from '../../http/representation/openapi.ts';

export const PortalLinkBody = Type.Union([Type.Object({}, { additionalProperties: false }), Type.Null()], {
  description: 'No members: send no body, or `{}`.',
});

const PortalLink = Type.Object(
  {
    Url: Type.String({
      format: 'uri',
      description: 'Opens the integrator portal for the calling client only. Works once, until ExpiresAt.',
    }),
    ExpiresAt: Type.String({ format: 'date-time', description: 'UTC, RFC 3339: 15 minutes after issue.' }),
  },
  {
    examples: [
      {
        Url: 'https://signet.example/console/portal-links/3q2-7wGUdyKpUq6u4VF9c8Y0pQ3lX_nF2bT1rK5aWmE',
        ExpiresAt: '2026-11-24T12:15:00.000Z',
      },
    ],
  },
);

export const PortalLinkResponses = {
  201: PortalLink,
  403: problemResponse(
    'The token lacks webhooks:manage, or is an end-user token: a portal link is issued to a client for itself.',
  ),
};
