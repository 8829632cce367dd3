// Small fetch wrappers so tests read as requests and assertions.
import { expectStatus } from './expect.ts';
export interface CallOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /**
   * E.g. AbortSignal.timeout(ms): the call fails when no complete answer came in time. Without one the
   * call still has a deadline, CALL_TIMEOUT_MS.
   */
  signal?: AbortSignal;
}

/**
 * The deadline of a call that brings no signal of its own: undici's fetch waits forever on a server that
 * accepts a request and never answers, which would hang a test instead of failing it.
 */
export const CALL_TIMEOUT_MS = 30_000;

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * fetch with a deadline: CALL_TIMEOUT_MS unless `init` brings its own signal. The signal also bounds
 * reading the body. A passed deadline fails naming the request.
 */
export async function fetchWithin(url: string | URL, init: RequestInit = {}): Promise<Response> {
  const signal = init.signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS);
  try {
    return await fetch(url, { ...init, signal });
  } catch (err) {
    if (!signal.aborted) throw err;
    const deadline = init.signal ? 'its own deadline' : `${CALL_TIMEOUT_MS} ms`;
    throw new Error(`${init.method ?? 'GET'} ${String(url)}: no answer within ${deadline}`, { cause: err });
  }
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const signal = options.signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS);
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${baseUrl}${path}`, { method, headers, body, signal });
    text = await response.text();
  } catch (err) {
    if (!signal.aborted) throw err;
    // Says which request found no complete answer (fetch only reports "TimeoutError").
    const deadline = options.signal ? 'its own deadline' : `${CALL_TIMEOUT_MS} ms`;
    throw new Error(`${method} ${baseUrl}${path}: no complete answer within ${deadline}`, { cause: err });
  }
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export const CUSTOMER = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

/**
 * The Location a redirect carries, as a URL (relative to `base` when given); a response without one fails
 * showing its status and body.
 */
export async function locationOf(response: Response, base?: string): Promise<URL> {
  const location = response.headers.get('location');
  if (location === null)
    throw new Error(`expected a redirect with a Location, got ${response.status}: ${await response.text()}`);
  return new URL(location, base);
}

/**
 * call() that must answer `status`: a refused request fails with its status and body (expectStatus);
 * otherwise the result.
 */
export async function callExpecting(
  baseUrl: string,
  method: string,
  path: string,
  status: number,
  options: CallOptions = {},
  what = `${method} ${path}`,
): Promise<CallResult> {
  const result = await call(baseUrl, method, path, options);
  expectStatus(result, status, what);
  return result;
}

/** Every page of a cursor-paged list as `token` reads it, following `_links.next` until there is none. */
export async function allPages<T>(
  baseUrl: string,
  path: string,
  token: string,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let next: string | undefined = path;
  let pages = 0;
  while (next) {
    const page: { Items: T[]; _links: { next?: { href: string } } } = (
      await callExpecting(baseUrl, 'GET', next, 200, { token }, `page ${pages + 1} of ${path}`)
    ).json;
    items.push(...page.Items);
    pages += 1;
    const href: string | undefined = page._links.next?.href;
    next = href && new URL(href).pathname + new URL(href).search;
  }
  return { items, pages };
}
