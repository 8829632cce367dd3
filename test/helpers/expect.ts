// Shared status and problem+json assertions that print the response body when they fail, so a red
// test says `expected 201, got 422: {"type":…,"detail":"Total must be…"}` and not only `422 !== 201`.
import assert from 'node:assert/strict';

/**
 * Any response shape the tests use: CallResult (text, json), RawResponse (body, json), TokenResult
 * (body as parsed JSON), the receiver kit's Answer (json, contentType).
 */
export interface ResponseLike {
  status: number;
  text?: string;
  body?: unknown;
  json?: unknown;
  headers?: Headers | Record<string, string | string[] | undefined>;
  contentType?: string | null;
}

const MAX_SHOWN = 2000;

/** The body as sent (text) when the shape keeps it, else its parsed JSON; cut short when long. */
function shown(response: ResponseLike): string {
  let text: string;
  if (typeof response.text === 'string') text = response.text;
  else if (typeof response.body === 'string') text = response.body;
  else if (response.body !== undefined) text = JSON.stringify(response.body);
  else if (response.json !== undefined) text = JSON.stringify(response.json);
  else text = '(no body)';
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}… (${text.length} characters)` : text;
}

function contentTypeOf(response: ResponseLike): string | null | undefined {
  if (response.contentType !== undefined) return response.contentType;
  const headers = response.headers;
  if (headers === undefined) return undefined;
  if (headers instanceof Headers) return headers.get('content-type');
  const value = headers['content-type'];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The parsed body: `json` when the shape parsed it, else `body` when it is an object, else the text parsed. */
function parsed(response: ResponseLike): Record<string, unknown> | undefined {
  if (response.json !== undefined) return response.json as Record<string, unknown>;
  if (response.body !== undefined && typeof response.body === 'object') return response.body as Record<string, unknown>;
  const text = typeof response.text === 'string' ? response.text : response.body;
  if (typeof text !== 'string' || text === '') return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Asserts the HTTP status; on failure the message carries the response body. A raw fetch Response is
 * read (a clone, so the caller can still read it) only when the status differs: await that form.
 */
export function expectStatus(response: Response, status: number, what?: string): Promise<void>;
export function expectStatus(response: ResponseLike, status: number, what?: string): void;
export function expectStatus(response: Response | ResponseLike, status: number, what?: string): Promise<void> | void {
  if (response instanceof Response) {
    if (response.status === status) return Promise.resolve();
    const read = response.bodyUsed ? Promise.resolve('(body already read)') : response.clone().text();
    return read.then((text) => expectStatus({ status: response.status, text }, status, what));
  }
  const label = what ? `${what}: ` : '';
  assert.equal(response.status, status, `${label}expected HTTP ${status}, got ${response.status}: ${shown(response)}`);
}

/** Further checks of a problem+json answer, for the tests of the error format itself. */
export interface ProblemChecks {
  /** Names the case in a failure message. */
  what?: string;
  /** The exact media type with its charset, `application/problem+json; charset=utf-8`. */
  exactMediaType?: boolean;
  /** The members every problem of Signet's carries: `status` (the HTTP status), `title` and `detail` (RFC 9457 §3.1). */
  members?: boolean;
  /** `requestId` in the body: the request id the X-Request-Id header carries. */
  requestId?: boolean;
  /** `instance`: this path (its query left out), absolute on the base of `type`; `true`: any string. */
  instance?: string | true;
  /** What `detail` must match. */
  detail?: RegExp;
  /** `type` an absolute http(s) URL, `<origin>/problems/<type>`. */
  absoluteType?: boolean;
  /** Cache-Control: no-store. */
  noStore?: boolean;
}

function headerOf(response: ResponseLike, name: string): string | null | undefined {
  const headers = response.headers;
  if (headers === undefined) return undefined;
  if (headers instanceof Headers) return headers.get(name);
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Asserts a problem+json answer (RFC 9457): the status, the media type, and a `type` ending in
 * `/problems/<type>` (any problem type when `type` is undefined). Returns the problem body for further
 * checks; `checks` (or a string naming the case) adds the ones of ProblemChecks.
 */
export function expectProblem(
  response: ResponseLike,
  status: number,
  type: string | undefined,
  checks: string | ProblemChecks = {},
): Record<string, unknown> {
  const options = typeof checks === 'string' ? { what: checks } : checks;
  const what = options.what;
  expectStatus(response, status, what);
  const label = what ? `${what}: ` : '';
  const contentType = contentTypeOf(response);
  assert.match(
    contentType ?? '',
    /^application\/problem\+json(;|$)/,
    `${label}content-type ${String(contentType)}: ${shown(response)}`,
  );
  if (options.exactMediaType)
    assert.equal(contentType, 'application/problem+json; charset=utf-8', `${label}${shown(response)}`);
  const body = parsed(response);
  assert.ok(body, `${label}a problem body: ${shown(response)}`);
  const slug = type === undefined ? '[a-z0-9-]+' : type.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  assert.match(
    String(body.type),
    new RegExp(`${options.absoluteType ? '^https?://[^/]+' : ''}/problems/${slug}$`),
    `${label}expected problem type …/problems/${type ?? '<type>'}, got ${String(body.type)}: ${shown(response)}`,
  );
  if (options.members) {
    assert.equal(body.status, status, `${label}the status member: ${shown(response)}`);
    assert.ok(typeof body.title === 'string' && body.title.length > 0, `${label}a title: ${shown(response)}`);
    assert.equal(typeof body.detail, 'string', `${label}a detail: ${shown(response)}`);
  }
  if (options.requestId) {
    const header = headerOf(response, 'x-request-id');
    assert.ok(header, `${label}an X-Request-Id header`);
    assert.equal(body.requestId, header, `${label}the body names the request id the header carries`);
  }
  if (options.instance === true)
    assert.equal(typeof body.instance, 'string', `${label}an instance: ${shown(response)}`);
  else if (options.instance !== undefined)
    assert.equal(body.instance, `${new URL(String(body.type)).origin}${options.instance.split('?')[0]}`, label);
  if (options.detail) assert.match(String(body.detail), options.detail, label);
  if (options.noStore) assert.equal(headerOf(response, 'cache-control'), 'no-store', `${label}Cache-Control`);
  return body;
}

/**
 * The parsed JSON body of a fetch Response that must have `status` (200 unless told): a refused request
 * fails here with its status and body, not later as a JSON syntax error or a missing field.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the caller names the shape it reads
export async function expectJson(response: Response, status = 200, what?: string): Promise<any> {
  await expectStatus(response, status, what);
  return response.json();
}
