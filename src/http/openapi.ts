// OpenAPI 3.1 generated from the route schemas (@fastify/swagger), served at /openapi.json, with a
// reference page at /docs (@fastify/swagger-ui, assets served locally: nothing loads from the internet).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { PROBLEM_TYPES } from './problems.ts';
import { openApiWebhooks, WEBHOOKS_DESCRIPTION } from '../webhooks/webhooks.openapi.ts';

const DESCRIPTION = `Orders API of Signet. Every /api call needs \`Authorization: Bearer <access token>\` (RFC 6750, RFC 9068 JWT).

**Order states**: \`pending\` →pay→ \`paid\` →ship→ \`shipped\` →deliver→ \`delivered\`; \`pending\` →cancel→ \`cancelled\`.
Only \`pending\` orders can change CustomerId/Total/Currency; only \`pending\` and \`cancelled\` orders can be deleted (409 otherwise).
Transitions: \`POST /api/orders/{id}/{pay|cancel|ship|deliver}\`, or PATCH of \`Status\`.

**Errors** are \`application/problem+json\` (RFC 9457) with \`type\`, \`title\`, \`status\`, \`detail\`, \`instance\`, \`requestId\` and, for validation, \`errors[]\` of \`{pointer, detail}\`.
Types: ${Object.values(PROBLEM_TYPES).map((t) => `\`${t.slug}\` (${t.status})`).join(', ')}.

**Idempotency-Key** on POST: same key + same body → the stored response again with \`Idempotent-Replayed: true\`; different body → 409; still in flight → 409 with Retry-After. Keys expire after 24 h (configurable).

**Conditional requests**: strong ETags and Last-Modified on orders; If-None-Match/If-Modified-Since → 304; If-Match/If-Unmodified-Since on writes → 412 when stale.

${WEBHOOKS_DESCRIPTION}`;

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
      return { schema: transformed, url };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
