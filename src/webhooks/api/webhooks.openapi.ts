// The outgoing side in the OpenAPI document: OpenAPI 3.1 `webhooks` describe what Signet POSTs to a
// registered callback URL, one entry per event type, with the signature headers and the envelope.
import { EVENT_DESCRIPTIONS, EVENT_TYPES, type EventType } from '../outbox/events.catalogue.ts';
import { EVENT_DATA } from '../outbox/events.examples.ts';

export const WEBHOOKS_DESCRIPTION = `**Webhooks**: register a callback with \`POST /api/webhooks\` (scope \`webhooks:manage\`). Each event is POSTed as JSON
\`{"Id":"evt_…","Type":"order.paid","OccurredAtUtc":"…","Timestamp":"…","Data":{…}}\`, signed over the exact body bytes:
\`X-Service-Signature-256: sha256=<hex HMAC-SHA256>\` (newest secret), plus Standard Webhooks headers \`webhook-id\`, \`webhook-timestamp\`,
\`webhook-signature\` (one \`v1,\` per active secret). \`X-Service-Delivery\` (= \`webhook-id\`) is the same on every retry: dedupe on it.
\`Timestamp\` is the attempt's time (reject if older than 5 minutes); \`OccurredAtUtc\` is the event's. Any 2xx acknowledges; anything else is retried
(default: at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, ±20 % jitter); 410 disables the endpoint. Missed events: \`GET /api/events\` (scope \`events:read\`).`;

function headerParameter(name: string, description: string) {
  return { name, in: 'header', required: true, schema: { type: 'string' }, description };
}

export function openApiWebhooks(headerName: string): Record<string, unknown> {
  const parameters = [
    headerParameter(
      `X-${headerName}-Signature-256`,
      '`sha256=` + lowercase hex HMAC-SHA256 of the raw body, keyed with the endpoint secret (the whole `whsec_…` string).',
    ),
    headerParameter(
      `X-${headerName}-Delivery`,
      'Delivery id (`dlv_…`), unchanged across retries and redeliveries: the idempotency key.',
    ),
    headerParameter(`X-${headerName}-Event`, 'The event type.'),
    headerParameter('webhook-id', 'Standard Webhooks: the delivery id.'),
    headerParameter('webhook-timestamp', "Standard Webhooks: the attempt's Unix time in seconds."),
    headerParameter(
      'webhook-signature',
      'Standard Webhooks: space-separated `v1,<base64>` signatures, one per active secret.',
    ),
  ];
  // One envelope per type: Data is that type's schema (events.examples.ts), with its example.
  const envelope = (type: EventType) => ({
    type: 'object',
    required: ['Id', 'Type', 'OccurredAtUtc', 'Timestamp', 'Data'],
    properties: {
      Id: {
        type: 'string',
        description: 'Event id (`evt_…`); the same in every delivery of this event, and in GET /api/events.',
      },
      Type: { type: 'string' },
      OccurredAtUtc: { type: 'string', format: 'date-time' },
      Timestamp: {
        type: 'string',
        format: 'date-time',
        description: 'When this attempt was signed; inside the signed bytes (replay protection).',
      },
      Data: EVENT_DATA[type].schema,
    },
  });
  const example = (type: EventType) => ({
    Id: 'evt_00000000000000000000000000000000',
    Type: type,
    OccurredAtUtc: '2026-01-15T09:45:00.000Z',
    Timestamp: '2026-01-15T09:45:00.250Z',
    Data: EVENT_DATA[type].example,
  });
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          summary: EVENT_DESCRIPTIONS[type],
          parameters,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: envelope(type), example: example(type) } },
          },
          responses: {
            '2XX': { description: 'Acknowledged. Anything else (or no answer within the timeout) is retried.' },
            '410': { description: 'Disables the endpoint.' },
          },
        },
      },
    ]),
  );
}
