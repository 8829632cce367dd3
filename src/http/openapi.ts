// OpenAPI 3.1 generated from the route schemas (@fastify/swagger), served at /openapi.json, with a
// reference page at /docs (@fastify/swagger-ui, assets served locally: nothing loads from the internet).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { FeatureContribution } from './feature.ts';
import { PROBLEM_TYPES, type ProblemType } from './problems.ts';

/** The description: what every operation shares, then each feature's own section. */
function description(features: readonly FeatureContribution[]): string {
  // Generic types first, then each feature's; by status, as a reader looks them up.
  const types: ProblemType[] = [
    ...Object.values(PROBLEM_TYPES),
    ...features.flatMap((f) => Object.values(f.problemTypes)),
  ].sort((a, b) => a.status - b.status);
  const shared = `Orders API of Signet. Every /api call needs \`Authorization: Bearer <access token>\` (RFC 6750, RFC 9068 JWT).

**Errors** are \`application/problem+json\` (RFC 9457) with \`type\`, \`title\`, \`status\`, \`detail\`, \`instance\`, \`requestId\` and, for validation, \`errors[]\` of \`{pointer, detail}\`.
Types: ${types.map((t) => `\`${t.slug}\` (${t.status})`).join(', ')}.

**Idempotency-Key** on POST: same key + same body → the stored response again with \`Idempotent-Replayed: true\`; different body → 409; still in flight → 409 with Retry-After. Keys expire after 24 h (configurable).`;
  return [shared, ...features.map((f) => f.openApi.description)].join('\n\n');
}

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

export async function registerOpenApi(app: FastifyInstance, features: readonly FeatureContribution[]): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Signet API', version: '0.1.0', description: description(features) },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      tags: [...features.flatMap((f) => f.openApi.tags), 'operations'].map((name) => ({ name })),
      // Plain JSON in the OpenAPI 3.1 shape; the plugin types know paths but not webhooks in detail.
      webhooks: Object.assign({}, ...features.map((f) => f.openApi.webhooks ?? {})) as never,
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
