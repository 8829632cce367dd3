// Every response a test server sends is checked against the OpenAPI document the app generates
// (/openapi.json): its status is listed for the operation, its Content-Type is a documented media type
// and its body validates against the schema documented for that status and media type. A response the
// document does not describe is a violation; TestServer.close() fails the test that caused it.
import { AssertionError } from 'node:assert';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Routes that are not in the document on purpose. Anything else a test reaches must be documented.
 * (Requests no route matched, answered 404/405 by src/http/problems/not-found.ts, have no operation to check.)
 */
const UNDOCUMENTED: readonly { prefix: string; why: string }[] = [
  { prefix: '/oauth/', why: 'the authorization server (oidc-provider and the login/consent pages): HTML and OAuth' },
  { prefix: '/.well-known/oauth-authorization-server', why: 'RFC 8414 metadata, a copy of the OIDC discovery' },
  { prefix: '/docs', why: 'the reference page (@fastify/swagger-ui) and its assets' },
  { prefix: '/openapi.json', why: 'the document itself' },
  { prefix: '/console', why: 'the browser console: HTML, assets and its backend-for-frontend (src/console/)' },
];

/** @fastify/cors answers every preflight (OPTIONS, Fetch standard §3.2.2) on its catch-all route. */
const CORS_PREFLIGHT_ROUTE = '*';

const DOCUMENT_ID = 'openapi.json';
const NO_BODY_STATUSES = new Set([204, 304]);
const BODY_CLIP = 300;

export interface Violation {
  method: string;
  url: string;
  status: number;
  contentType: string;
  problem: string;
  body: string;
}

export interface Conformance {
  readonly violations: readonly Violation[];
  /** Throws an AssertionError listing every violation seen so far. */
  assertNone(): void;
}

type Operation = { responses?: Record<string, { content?: Record<string, unknown> }> };
type OpenApiDocument = { paths?: Record<string, Record<string, Operation>> };

/** Fastify's `/api/orders/:id` is the document's `/api/orders/{id}` (as @fastify/swagger writes it). */
export function documentPath(routeUrl: string): string {
  return routeUrl.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function pointerSegment(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function isUndocumentedOnPurpose(routeUrl: string): boolean {
  if (routeUrl === '/') return true; // the redirect to the console
  return UNDOCUMENTED.some(({ prefix }) => routeUrl === prefix || routeUrl.startsWith(prefix));
}

function payloadText(payload: unknown): string | undefined {
  if (payload === undefined || payload === null) return '';
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return undefined; // a stream: not read here (no documented route streams)
}

function mediaTypeOf(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase();
}

function isJson(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/**
 * Installs the check on `app` (after buildApp, before listen). The document is read once, on the first
 * response; each schema is compiled once and cached by operation, status and media type.
 */
export function checkResponsesAgainstDocument(app: FastifyInstance): Conformance {
  const violations: Violation[] = [];
  const validators = new Map<string, ValidateFunction>();
  let ajv: Ajv2020 | undefined;
  let document: OpenApiDocument | undefined;

  const schemaValidator = (pointer: string): ValidateFunction => {
    let validate = validators.get(pointer);
    if (!validate) {
      if (!ajv || !document) {
        document = app.swagger() as OpenApiDocument;
        // OpenAPI 3.1 schemas are JSON Schema 2020-12. The whole document is one schema resource, so
        // refs into `components` resolve; the OpenAPI keywords around the schemas are not JSON Schema.
        ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
        addFormats.default(ajv);
        ajv.addSchema(document as object, DOCUMENT_ID);
      }
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      validators.set(pointer, validate);
    }
    return validate;
  };

  const check = (request: FastifyRequest, reply: FastifyReply, payload: unknown): string | undefined => {
    const routeUrl = request.routeOptions.url;
    if (routeUrl === undefined || isUndocumentedOnPurpose(routeUrl)) return undefined;
    if (request.method === 'OPTIONS' && routeUrl === CORS_PREFLIGHT_ROUTE) return undefined;
    document ??= app.swagger() as OpenApiDocument;
    const path = documentPath(routeUrl);
    // @fastify/swagger lists GET only; HEAD is answered by the GET route, with the same statuses.
    const method = request.method === 'HEAD' ? 'get' : request.method.toLowerCase();
    const operation = document.paths?.[path]?.[method];
    if (!operation) return `route ${request.method} ${routeUrl} is not in the OpenAPI document`;
    const status = String(reply.statusCode);
    const response = operation.responses?.[status];
    if (!response) {
      const listed = Object.keys(operation.responses ?? {}).join(', ');
      return `status ${status} is not documented for ${method.toUpperCase()} ${path} (documented: ${listed})`;
    }
    // 204 and 304 never carry a body (RFC 9110 §15.3.5, §15.4.5): Fastify drops what a handler passed.
    const text = NO_BODY_STATUSES.has(reply.statusCode) ? '' : payloadText(payload);
    const contentType = String(reply.getHeader('content-type') ?? '');
    const content = response.content ?? {};
    if (Object.keys(content).length === 0) {
      return text === '' || text === undefined ? undefined : `status ${status} is documented without a body`;
    }
    if (request.method === 'HEAD' && text === '') return undefined;
    const mediaType = mediaTypeOf(contentType);
    if (!(mediaType in content)) {
      return `Content-Type ${contentType || '(none)'} is not documented for ${status} (documented: ${Object.keys(content).join(', ')})`;
    }
    if (text === undefined || !isJson(mediaType)) return undefined;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return `the ${mediaType} body is not JSON`;
    }
    const pointer = ['', 'paths', path, method, 'responses', status, 'content', mediaType, 'schema']
      .map(pointerSegment)
      .join('/');
    const validate = schemaValidator(pointer);
    if (validate(body)) return undefined;
    return `the body does not match the documented schema: ${ajv!.errorsText(validate.errors, { separator: '; ' })}`;
  };

  app.addHook('onSend', async (request, reply, payload) => {
    let problem: string | undefined;
    try {
      problem = check(request, reply, payload);
    } catch (err) {
      problem = `the check itself failed: ${(err as Error).message}`;
    }
    if (problem) {
      violations.push({
        method: request.method,
        url: request.url,
        status: reply.statusCode,
        contentType: String(reply.getHeader('content-type') ?? ''),
        problem,
        body: (payloadText(payload) ?? '(stream)').slice(0, BODY_CLIP),
      });
    }
    return payload;
  });

  return {
    violations,
    assertNone() {
      if (violations.length === 0) return;
      const lines = violations.map(
        (v) => `- ${v.method} ${v.url} → ${v.status} ${v.contentType}\n  ${v.problem}\n  body: ${v.body}`,
      );
      throw new AssertionError({
        message: `${violations.length} response(s) not described by /openapi.json:\n${lines.join('\n')}`,
      });
    },
  };
}
