// OpenAPI 3.1 generated from the route schemas (@fastify/swagger), served at /openapi.json, with a
// reference page at /docs (@fastify/swagger-ui, assets served locally: nothing loads from the internet).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { PROBLEM_TYPES } from './problems.ts';
import { openApiWebhooks, WEBHOOKS_DESCRIPTION } from '../webhooks/api/webhooks.openapi.ts';

const DESCRIPTION = `Orders API of Signet. Every /api call needs \`Authorization: Bearer <access token>\` (RFC 6750, RFC 9068 JWT).

**Order states**: \`pending\` →pay→ \`paid\` →ship→ \`shipped\` →deliver→ \`delivered\`; \`pending\` →cancel→ \`cancelled\`.
Only \`pending\` orders can change CustomerId/Total/Currency; only \`pending\` and \`cancelled\` orders can be deleted (409 otherwise).
Transitions: \`POST /api/orders/{id}/{pay|cancel|ship|deliver}\`, or PATCH of \`Status\`.

**Errors** are \`application/problem+json\` (RFC 9457) with \`type\`, \`title\`, \`status\`, \`detail\`, \`instance\`, \`requestId\` and, for validation, \`errors[]\` of \`{pointer, detail}\`.
Types: ${Object.values(PROBLEM_TYPES)
  .map((t) => `\`${t.slug}\` (${t.status})`)
  .join(', ')}.

**Idempotency-Key** on POST: same key + same body → the stored response again with \`Idempotent-Replayed: true\`; different body → 409; still in flight → 409 with Retry-After. Keys expire after 24 h (configurable).

**Conditional requests**: strong ETags and Last-Modified on orders; If-None-Match/If-Modified-Since → 304; If-Match/If-Unmodified-Since on writes → 412 when stale.

${WEBHOOKS_DESCRIPTION}`;

/** RFC 9457 problem details, as every error of the service is sent (src/http/errors.ts). */
const PROBLEM_SCHEMA = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string', format: 'uri', description: 'Identifies the kind of problem; compare on this.' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string', description: 'What went wrong with this request, and what to change.' },
    instance: { type: 'string', format: 'uri' },
    requestId: { type: 'string', description: 'Also in X-Request-Id; quote it to find the request in the logs.' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        properties: { pointer: { type: 'string', description: 'RFC 6901 JSON pointer' }, detail: { type: 'string' } },
      },
    },
  },
};

/** Every operation can fail; the ranges name the body every error has (OpenAPI 3.1 §4.8.16.2). */
const ERROR_RESPONSES = {
  '4xx': {
    description:
      'The request cannot be served as sent (see `type` and `detail`); 429 and 409 in flight carry Retry-After.',
    content: { 'application/problem+json': { schema: PROBLEM_SCHEMA } },
  },
  '5xx': {
    description: 'A fault or a temporary outage; 503 carries Retry-After.',
    content: { 'application/problem+json': { schema: PROBLEM_SCHEMA } },
  },
};

export async function registerOpenApi(app: FastifyInstance, options: { webhookHeaderName: string }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Signet API', version: '0.1.0', description: DESCRIPTION },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      tags: [{ name: 'orders' }, { name: 'webhooks' }, { name: 'events' }, { name: 'operations' }],
      // Plain JSON in the OpenAPI 3.1 shape; the plugin types know paths but not webhooks in detail.
      webhooks: openApiWebhooks(options.webhookHeaderName) as never,
    },
    transform: ({ schema, url, route }) => {
      const scope = (route.config as { scope?: string } | undefined)?.scope;
      const transformed = { ...(schema ?? {}) } as Record<string, unknown>;
      if (scope) transformed.security = [{ bearer: [scope] }];
      transformed.response = { ...ERROR_RESPONSES, ...(transformed.response as object | undefined) };
      return { schema: transformed, url };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
