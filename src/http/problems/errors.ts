// One error handler for the whole app: every error leaves as application/problem+json (RFC 9457).
// Registered before any plugin or route, or those would keep Fastify's default error format.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clip, Problem, pointerSegment, type FieldError } from './problems.ts';
import { publicBaseUrl } from '../admission/origin.ts';
import { isDatabaseOutage } from './outage.ts';
import { validationProblem } from './validation.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** Seconds a client should wait after a database outage before retrying (the /readyz hint too). */
export const OUTAGE_RETRY_AFTER = '5';
/** Pointers listed in a validation problem's detail; `errors` has them all. */
const DETAIL_POINTERS = 10;

/**
 * The path of the request, absolute like `type` and the resources' links: one base (PUBLIC_URL or the
 * trusted origin) for every URL the service writes. An absolute-form target (RFC 9112 §3.2.2) keeps
 * only its path, so a client-chosen authority is never echoed.
 */
function instanceOf(request: FastifyRequest, base: string): string {
  const path = /^(?:[a-z][a-z0-9+.-]*:\/\/[^/?#]*)?(\/[^?#]*)/i.exec(request.url)?.[1] ?? '/';
  return `${base}${path}`;
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: Problem): FastifyReply {
  const { type, detail, options } = problem;
  const base = publicBaseUrl(request);
  const body: Record<string, unknown> = {
    type: `${base}/problems/${type.slug}`,
    title: type.title,
    status: type.status,
    detail,
    instance: instanceOf(request, base),
    requestId: request.id,
    ...options.extensions,
  };
  if (options.errors) body.errors = options.errors;
  for (const [name, value] of Object.entries(options.headers ?? {})) reply.header(name, value);
  return reply
    .code(type.status)
    .header('content-type', PROBLEM_CONTENT_TYPE)
    .header('cache-control', 'no-store')
    .send(JSON.stringify(body));
}

interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/**
 * Maps schema-validation errors to one entry per bad field, addressed by JSON pointer. Member names
 * come from the client: a pointer is clipped (ECHO_LIMIT, with an ellipsis) so a 60,000-character
 * unknown member cannot make the error body larger than the request.
 */
export function fieldErrors(validation: AjvError[]): FieldError[] {
  // ajv reports a value outside an enum without naming the allowed ones, plus a "must be string" at
  // the same place when it is not even a string: one entry per field, naming what is allowed.
  const enumAt = new Set(validation.filter((e) => e.keyword === 'enum').map((e) => e.instancePath));
  return validation
    .filter((e) => e.keyword !== 'type' || !enumAt.has(e.instancePath))
    .map((e) => {
      if (e.keyword === 'enum') {
        return {
          pointer: clip(e.instancePath),
          detail: clip(`must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`),
        };
      }
      if (e.keyword === 'additionalProperties') {
        return {
          pointer: clip(`${e.instancePath}/${pointerSegment(String(e.params.additionalProperty))}`),
          detail: 'unknown field',
        };
      }
      if (e.keyword === 'required') {
        return {
          pointer: clip(`${e.instancePath}/${pointerSegment(String(e.params.missingProperty))}`),
          detail: 'is required',
        };
      }
      return { pointer: clip(e.instancePath), detail: e.message ?? e.keyword };
    });
}

/** "3 field(s) did not validate: /a, /b, /c", naming at most DETAIL_POINTERS of them. */
function validationDetail(errors: FieldError[]): string {
  const named = errors.slice(0, DETAIL_POINTERS).map((e) => e.pointer || '(body)');
  const more = errors.length > DETAIL_POINTERS ? ` and ${errors.length - DETAIL_POINTERS} more` : '';
  return `${errors.length} field(s) did not validate: ${named.join(', ')}${more}`;
}

function fromFastifyError(
  error: FastifyError & { validation?: AjvError[]; validationContext?: string },
  request: FastifyRequest,
  patchTypes: string,
): Problem {
  if (error.validation && error.validationContext === 'body' && request.body === undefined) {
    return new Problem('malformedBody', 'a JSON body is required (Content-Type: application/json)');
  }
  if (error.validation) {
    const errors = fieldErrors(error.validation);
    if (error.validationContext === 'body') {
      return validationProblem(errors, validationDetail(errors));
    }
    return new Problem(
      'invalidParameter',
      `invalid ${error.validationContext ?? 'request'} parameter: ${errors
        .slice(0, DETAIL_POINTERS)
        .map((e) => `${e.pointer.slice(1) || 'value'} ${e.detail}`)
        .join('; ')}`,
      { errors },
    );
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      if (request.method === 'PATCH' && patchTypes) {
        return new Problem('unsupportedMediaType', `PATCH takes ${patchTypes}`, {
          headers: { 'accept-patch': patchTypes },
        });
      }
      return new Problem('unsupportedMediaType', 'send the body as application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new Problem('payloadTooLarge', 'the request body exceeds the configured limit');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new Problem('malformedBody', 'the body is empty but Content-Type says JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new Problem('badRequest', 'Content-Length does not match the body');
  }
  if (isDatabaseOutage(error)) {
    return new Problem(
      'temporarilyUnavailable',
      'the service cannot complete requests right now; retry after the Retry-After delay',
      { headers: { 'retry-after': OUTAGE_RETRY_AFTER } },
    );
  }
  if (error.statusCode === 413) return new Problem('payloadTooLarge', 'the request body exceeds the configured limit');
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500)
    return new Problem('badRequest', clip(error.message));
  return new Problem('internal', 'an unexpected error occurred; quote the requestId when reporting it');
}

/** `patchMediaTypes`: the PATCH document types the features accept (http/feature.ts), for a 415's Accept-Patch. */
export function registerErrorHandler(app: FastifyInstance, patchMediaTypes: readonly string[]): void {
  const patchTypes = patchMediaTypes.join(', ');
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = error instanceof Problem ? error : fromFastifyError(error, request, patchTypes);
    if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
    else if (!(error instanceof Problem)) request.log.debug({ err: error }, 'request rejected');
    return sendProblem(request, reply, problem);
  });
}
