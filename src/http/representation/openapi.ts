// OpenAPI 3.1 generated from the route schemas (@fastify/swagger), served at /openapi.json, with a
// reference page at /docs (@fastify/swagger-ui, assets served locally: nothing loads from the internet).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { precompress, sendEncoded, type Encoded } from './encodings.ts';
import type { FeatureContribution } from '../feature.ts';
import { PROBLEM_TYPES, type ProblemType } from '../problems/problems.ts';

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

**Idempotency-Key** on POST: same key + same body → the stored response again with \`Idempotent-Replayed: true\`; different body → 409; still in flight → 409 with Retry-After (a create's duplicate instead waits for the first one's write and gets its replay). Keys expire after 24 h (configurable).`;
  return [shared, ...features.map((f) => f.openApi.description)].join('\n\n');
}

/** RFC 9457 problem details, as every error of the service is sent (src/http/problems/errors.ts). */
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

/** The body of a response with this status: a problem (RFC 9457), as every 4xx and 5xx is sent. */
export function problemResponse(description: string, schema: object = PROBLEM_SCHEMA) {
  return { description, content: { 'application/problem+json': { schema } } };
}

/** A problem body with extension members (RFC 9457 §3.2) beside the standard ones. */
export function problemWith(properties: Record<string, unknown>): object {
  return { ...PROBLEM_SCHEMA, properties: { ...PROBLEM_SCHEMA.properties, ...properties } };
}

/**
 * Every operation can fail; the ranges give the body any error has (OpenAPI 3.1 §4.8.16.2), whoever
 * sends it (a proxy in front of the service too). Each status the service itself sends is also listed
 * on its own, by what the route does (operationErrors); test/helpers/openapi-conformance.ts holds the
 * suite to that.
 */
const ERROR_RESPONSES = {
  '4xx': problemResponse(
    'The request cannot be served as sent (see `type` and `detail`); 429 and 409 in flight carry Retry-After.',
  ),
  '5xx': problemResponse('A fault or a temporary outage; 503 carries Retry-After.'),
};

/** Methods whose request body is read (Fastify parses a body on DELETE too). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A query parameter with a default may be left out: validation fills the default in (useDefaults), which
 * is why the schema lists it as required, so the handler's type has it. The document says what a client
 * must send, so it is optional there (OpenAPI 3.1 §4.8.12.1, `required`).
 */
function withDefaultsOptional(querystring: unknown): unknown {
  const query = querystring as { required?: string[]; properties?: Record<string, { default?: unknown }> } | undefined;
  if (!query?.required || !query.properties) return querystring;
  const required = query.required.filter((name) => query.properties![name]?.default === undefined);
  return { ...query, required };
}

type Operation = { requestBody?: { required?: boolean; content?: Record<string, { schema?: { anyOf?: unknown[] } }> } };

/** A body schema with a `null` branch: the body may be left out (Fastify validates a missing body as null). */
function admitsNoBody(operation: Operation): boolean {
  const schema = operation.requestBody?.content?.['application/json']?.schema;
  return (schema?.anyOf ?? []).some((branch) => (branch as { type?: unknown }).type === 'null');
}

/**
 * @fastify/swagger marks every request body required; one whose schema admits null (rotate-secret) is
 * optional (OpenAPI 3.1 §4.8.13.1).
 */
function optionalBodies<T>(openapiObject: T): T {
  const paths = (openapiObject as { paths?: Record<string, Record<string, Operation>> }).paths ?? {};
  for (const item of Object.values(paths))
    for (const operation of Object.values(item))
      if (operation.requestBody && admitsNoBody(operation)) operation.requestBody.required = false;
  return openapiObject;
}

interface RouteTraits {
  method: string;
  scope: string | undefined;
  rateLimited: boolean;
  schema: Record<string, unknown>;
}

/**
 * The statuses the shared layers of src/http/ answer on this operation: read off the route (its scope,
 * its parameters, its body), so no route can forget one. A route lists its own ones (409, 412 …) in
 * its response schema; those descriptions win.
 */
function operationErrors({ method, scope, rateLimited, schema }: RouteTraits): Record<string, object> {
  const errors: Record<string, object> = {
    400: problemResponse(
      'Malformed request: HTTP syntax, a missing, repeated or invalid Host or Authorization header, a bad query or path parameter, or a body that is not JSON.',
    ),
  };
  if (scope) {
    errors[401] = problemResponse('No valid access token (WWW-Authenticate names the error, RFC 6750 §3).');
    errors[403] = problemResponse('The token lacks the scope, or the resource is not the caller’s to use.');
  }
  if (schema.params) errors[404] = problemResponse('No such resource, or not one the caller may see.');
  if (BODY_METHODS.has(method)) {
    errors[413] = problemResponse('The request body is larger than BODY_LIMIT_BYTES.');
    errors[415] = problemResponse('The body has a media type this operation does not take.');
  }
  if (schema.body)
    errors[422] = problemResponse('The body is JSON but does not validate (`errors` names each member).');
  if (rateLimited) errors[429] = problemResponse('Rate limit reached; Retry-After says when to try again.');
  errors[500] = problemResponse('A fault; the body says nothing internal (quote `requestId`).');
  errors[503] = problemResponse(
    'Overloaded, shutting down, or a dependency (database, token issuer) unreachable; with Retry-After.',
  );
  return errors;
}

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
      const config = route.config as { scope?: string; rateLimit?: unknown } | undefined;
      const scope = config?.scope;
      const transformed = { ...(schema ?? {}) } as Record<string, unknown>;
      if (scope) transformed.security = [{ bearer: [scope] }];
      if (transformed.querystring) transformed.querystring = withDefaultsOptional(transformed.querystring);
      const method = String(Array.isArray(route.method) ? route.method[0] : route.method).toUpperCase();
      const errors = operationErrors({ method, scope, rateLimited: config?.rateLimit !== false, schema: transformed });
      transformed.response = { ...ERROR_RESPONSES, ...errors, ...(transformed.response as object | undefined) };
      return { schema: transformed, url };
    },
    transformObject: (documentObject) =>
      'openapiObject' in documentObject ? optionalBodies(documentObject.openapiObject) : documentObject.swaggerObject,
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  // 700 KB of JSON, fixed once the app is ready: serialized and compressed on the first request, then
  // sent in the coding the client accepts with a per-coding ETag (http/representation/encodings.ts); revalidated, never stale.
  let document: Encoded | undefined;
  app.get('/openapi.json', { schema: { hide: true } }, async (request, reply) => {
    document ??= precompress(Buffer.from(JSON.stringify(app.swagger())));
    return sendEncoded(request, reply, document, {
      contentType: 'application/json; charset=utf-8',
      cacheControl: 'no-cache',
    });
  });
}
