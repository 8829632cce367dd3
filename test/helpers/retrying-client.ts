// A client that follows the retry rules of docs/guides/calling-the-api.md ("Retries"), as an integrator would write
// it: a connection that fails, 502, 503, 504 and 429 are retried after `Retry-After` (or a short backoff when there
// is none), and so is 409 `idempotency-key-in-flight`; a POST is sent again only with its Idempotency-Key. Waiting
// out Retry-After is the behaviour under test here, not a test pausing for time to pass. Each call
// ends within its deadline. Counts what it retried, for the test's report.
import { setTimeout as delay } from 'node:timers/promises';
import { fetchWithin } from './http.ts';

/** Statuses whose request may be sent again unchanged, after Retry-After. */
const RETRYABLE = new Set([429, 502, 503, 504]);
/** Retry-After is honoured up to this long; a larger value is the server's business, not a test's. */
const MAX_WAIT_MS = 5000;
/** Backoff when an answer names no Retry-After (a failed connection): doubled per attempt, from this. */
const FIRST_BACKOFF_MS = 50;
/** One call (all its attempts) ends within this. */
const CALL_DEADLINE_MS = 45_000;

export interface RetryingResult {
  status: number;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers;
  attempts: number;
}

export interface RetryStats {
  retries: number;
  /** By cause: a status, or `connection`. */
  causes: Record<string, number>;
}

export function newRetryStats(): RetryStats {
  return { retries: 0, causes: {} };
}

export interface RetryingRequest {
  token?: string;
  body?: unknown;
  form?: Record<string, string>;
  idempotencyKey?: string;
}

/** Seconds of a Retry-After header (RFC 9110 §10.2.3), as milliseconds within MAX_WAIT_MS. */
function retryAfterMs(headers: Headers | undefined, attempt: number): number {
  const header = headers?.get('retry-after');
  const seconds = header === null || header === undefined ? Number.NaN : Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : FIRST_BACKOFF_MS * 2 ** Math.min(attempt, 6);
  return Math.min(ms, MAX_WAIT_MS);
}

function isInFlightConflict(status: number, text: string): boolean {
  return status === 409 && text.includes('idempotency-key-in-flight');
}

export async function retryingCall(
  baseUrl: string,
  method: string,
  path: string,
  request: RetryingRequest,
  stats: RetryStats,
): Promise<RetryingResult> {
  const started = Date.now();
  // A POST without a key is never resent after it may have reached the server (token requests are the exception:
  // a second token is harmless), so the caller passes a key for every POST that changes something.
  const resendable = method !== 'POST' || request.idempotencyKey !== undefined || request.form !== undefined;
  for (let attempt = 1; ; attempt++) {
    let response: Response | undefined;
    let text: string;
    try {
      response = await fetchWithin(`${baseUrl}${path}`, {
        ...init(method, request),
        signal: AbortSignal.timeout(15_000),
      });
      text = await response.text();
    } catch (err) {
      if (!resendable || Date.now() - started > CALL_DEADLINE_MS) throw err;
      note(stats, 'connection');
      await delay(retryAfterMs(undefined, attempt));
      continue;
    }
    const retry = RETRYABLE.has(response.status) || isInFlightConflict(response.status, text);
    if (!retry || !resendable || Date.now() - started > CALL_DEADLINE_MS)
      return { status: response.status, text, json: parse(text), headers: response.headers, attempts: attempt };
    note(stats, String(response.status));
    await delay(retryAfterMs(response.headers, attempt));
  }
}

function note(stats: RetryStats, cause: string): void {
  stats.retries++;
  stats.causes[cause] = (stats.causes[cause] ?? 0) + 1;
}

function init(method: string, request: RetryingRequest): RequestInit {
  const headers: Record<string, string> = {};
  if (request.token) headers.authorization = `Bearer ${request.token}`;
  if (request.idempotencyKey) headers['idempotency-key'] = request.idempotencyKey;
  if (request.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    return { method, headers, body: new URLSearchParams(request.form).toString() };
  }
  if (request.body !== undefined) {
    headers['content-type'] = 'application/json';
    return { method, headers, body: JSON.stringify(request.body) };
  }
  return { method, headers };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
