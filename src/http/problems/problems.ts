// The catalogue of error types (RFC 9457). Every error the service answers is one of these, so clients
// can branch on `type` and read `detail` (and `errors` for validation). The generic types live here; a
// feature declares its own (orders.errors.ts, webhooks.errors.ts) and contributes them when the app
// composes it (http/feature.ts), so the OpenAPI description still lists every type.

export interface ProblemType {
  slug: string;
  status: number;
  title: string;
}

export function problemType(slug: string, status: number, title: string): ProblemType {
  return { slug, status, title };
}

export const PROBLEM_TYPES = {
  badRequest: problemType('bad-request', 400, 'Bad request'),
  malformedBody: problemType('malformed-body', 400, 'The request body is not valid JSON'),
  invalidParameter: problemType('invalid-parameter', 400, 'A path or query parameter is invalid'),
  unauthorized: problemType('unauthorized', 401, 'Authentication required'),
  invalidToken: problemType('invalid-token', 401, 'The access token is not valid'),
  insufficientScope: problemType('insufficient-scope', 403, 'The access token lacks a required scope'),
  forbidden: problemType('forbidden', 403, 'Not allowed'),
  notFound: problemType('not-found', 404, 'Not found'),
  methodNotAllowed: problemType('method-not-allowed', 405, 'Method not allowed'),
  requestTimeout: problemType('request-timeout', 408, 'The request was not received in time'),
  idempotencyKeyReused: problemType(
    'idempotency-key-reused',
    409,
    'This Idempotency-Key was used with a different request',
  ),
  idempotencyKeyInFlight: problemType(
    'idempotency-key-in-flight',
    409,
    'A request with this Idempotency-Key is still being processed',
  ),
  preconditionFailed: problemType('precondition-failed', 412, 'A precondition failed'),
  payloadTooLarge: problemType('payload-too-large', 413, 'The request body is too large'),
  uriTooLong: problemType('uri-too-long', 414, 'The request target is too long'),
  unsupportedMediaType: problemType('unsupported-media-type', 415, 'Unsupported media type'),
  validation: problemType('validation-error', 422, 'The request body did not validate'),
  rateLimited: problemType('rate-limited', 429, 'Too many requests'),
  headerFieldsTooLarge: problemType('header-fields-too-large', 431, 'The request header fields are too large'),
  internal: problemType('internal-error', 500, 'Internal server error'),
  notImplemented: problemType('not-implemented', 501, 'The request method is not implemented'),
  issuerUnavailable: problemType('issuer-unavailable', 503, 'The token issuer could not be reached'),
  unavailable: problemType('service-unavailable', 503, 'The service is temporarily overloaded'),
  notReady: problemType('not-ready', 503, 'The service is not ready to serve requests'),
  temporarilyUnavailable: problemType('temporarily-unavailable', 503, 'The service is temporarily unavailable'),
  shuttingDown: problemType('shutting-down', 503, 'The service is shutting down'),
} as const;

export type ProblemKey = keyof typeof PROBLEM_TYPES;

export interface FieldError {
  pointer: string; // RFC 6901 JSON pointer into the request body or query
  detail: string;
}

interface ProblemOptions {
  errors?: FieldError[];
  headers?: Record<string, string>;
  extensions?: Record<string, unknown>;
}

/** An error that becomes a problem+json response. Throw it anywhere below a route. */
export class Problem extends Error {
  readonly type: ProblemType;
  readonly detail: string;
  readonly options: ProblemOptions;

  /** `type` is a generic key, or a feature's own ProblemType (see orders.errors.ts). */
  constructor(type: ProblemKey | ProblemType, detail: string, options: ProblemOptions = {}) {
    const resolved = typeof type === 'string' ? PROBLEM_TYPES[type] : type;
    // A 4xx is the client's doing: its stack would never be read, and capturing it costs microseconds
    // on paths (401, 404, 409) that can be hammered.
    const stackLimit = Error.stackTraceLimit;
    if (resolved.status < 500) Error.stackTraceLimit = 0;
    super(detail);
    Error.stackTraceLimit = stackLimit;
    this.name = 'Problem';
    this.type = resolved;
    this.detail = detail;
    this.options = options;
  }

  get status(): number {
    return this.type.status;
  }
}

/** Client input echoed in a problem (member names, values) is cut to this many characters, so an error body stays small whatever was sent. */
export const ECHO_LIMIT = 100;

/** `text` cut to ECHO_LIMIT characters, with an ellipsis when something was cut. */
export function clip(text: string, limit = ECHO_LIMIT): string {
  if (text.length <= limit) return text;
  const end = /[\uD800-\uDBFF]/.test(text[limit - 1]!) ? limit - 1 : limit; // never split a surrogate pair
  return `${text.slice(0, end)}…`;
}

/** Escapes one property name for a JSON pointer (RFC 6901 §3). */
export function pointerSegment(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}
