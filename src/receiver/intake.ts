// Accepting one webhook delivery, independent of any HTTP framework (docs/guides/receiving-webhooks.md: read the raw
// body, verify the signature, check the identifiers, enqueue, answer 200 at once). The checks run in
// the order of the table in docs/guides/receiving-webhooks.md, so each failure gets the most specific status.
import type { Inbox } from './inbox.ts';
import { problem, type Problem } from './problems.ts';
import { verifySignature } from './signature.ts';

export type { Problem } from './problems.ts';

export interface IntakeOptions {
  /** Source name (the :source path segment) → its secrets, newest first. */
  sources: Record<string, readonly string[]>;
  inbox: Inbox;
  /** The producer's name in the headers: X-<headerName>-Signature-256, -Delivery, -Event. */
  headerName?: string;
  /**
   * Accepted clock difference, past and future (docs/guides/producing-webhooks.md, "What a delivery looks like": 5
   * minutes).
   */
  toleranceMs?: number;
  maxBodyBytes?: number;
  now?: () => Date;
}

export interface IntakeResult {
  status: 200 | 400 | 401 | 404 | 413;
  problem?: Problem;
  duplicate?: boolean;
}

export interface IntakeRequest {
  source: string;
  rawBody: Buffer;
  /**
   * Pass Node's `req.headersDistinct` (every header as an array of its lines): `req.headers` joins a
   * repeated X-… header into one "a, b" string, which would pass for a delivery id of its own.
   */
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Every header as the list of its lines. Node's `headersDistinct`, or the same built from `rawHeaders`
 * where a request object (an injected test request) lacks it.
 */
export function distinctHeaders(req: {
  headers: IntakeRequest['headers'];
  headersDistinct?: Record<string, string[] | undefined>;
  rawHeaders?: string[];
}): IntakeRequest['headers'] {
  if (req.headersDistinct) return req.headersDistinct;
  if (!req.rawHeaders?.length) return req.headers;
  const lines: Record<string, string[]> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2)
    (lines[req.rawHeaders[i]!.toLowerCase()] ??= []).push(req.rawHeaders[i + 1]!);
  return lines;
}

export const DEFAULT_HEADER_NAME = 'Service';
export const DEFAULT_TOLERANCE_MS = 5 * 60_000;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

// RFC 3339 date-time (§5.6); Date.parse alone would also take forms like "2026-01-01" or "Jan 1".
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

interface Payload {
  id: string;
  timestampMs: number;
  /** The signed `Type`, when the producer puts one in the body (Signet does). */
  type: string | undefined;
}

function rejected(p: Problem): IntakeResult {
  return { status: p.status as IntakeResult['status'], problem: p };
}

const REPEATED = Symbol('repeated');

/** Node lowercases incoming header names; a header sent more than once is not trusted. */
function header(headers: IntakeRequest['headers'], name: string): string | undefined | typeof REPEATED {
  const value = headers[name.toLowerCase()];
  if (Array.isArray(value)) return value.length > 1 ? REPEATED : value[0];
  return value;
}

function hasOwn(record: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(record, key);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function parsePayload(rawBody: Buffer): Payload | string {
  let text: string;
  try {
    // RFC 8259 §8.1: JSON between systems is UTF-8. A lenient decode would store other bytes altered,
    // and the inbox would no longer hold what was signed.
    text = UTF8.decode(rawBody);
  } catch {
    return 'the body is not UTF-8';
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'the body is not JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body is not a JSON object';
  const { Id: id, Timestamp: timestamp, Type: type } = body as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') return 'Id is missing or not a non-empty string';
  if (typeof timestamp !== 'string' || !RFC3339.test(timestamp) || Number.isNaN(Date.parse(timestamp)))
    return 'Timestamp is missing or not an RFC 3339 date-time';
  if (type !== undefined && typeof type !== 'string') return 'Type is not a string';
  return { id, timestampMs: Date.parse(timestamp), type };
}

function checkHeaders(
  options: IntakeOptions,
  request: IntakeRequest,
  secrets: readonly string[],
): IntakeResult | { deliveryId: string; eventType: string } {
  const name = options.headerName ?? DEFAULT_HEADER_NAME;
  const signatureHeader = `X-${name}-Signature-256`;
  const signature = header(request.headers, signatureHeader);
  if (signature === REPEATED)
    return rejected(problem('invalid-signature', `${signatureHeader} appears more than once`));
  const check = verifySignature(request.rawBody, signature, secrets);
  if (!check.ok) return rejected(problem('invalid-signature', `${signatureHeader}: ${check.reason.replace('_', ' ')}`));
  // Identifiers are read only after the signature: an unauthenticated caller learns nothing more.
  const ids = { deliveryId: `X-${name}-Delivery`, eventType: `X-${name}-Event` };
  const deliveryId = header(request.headers, ids.deliveryId);
  const eventType = header(request.headers, ids.eventType);
  for (const [headerName, value] of [
    [ids.deliveryId, deliveryId],
    [ids.eventType, eventType],
  ] as const) {
    if (value === REPEATED) return rejected(problem('repeated-header', `${headerName} appears more than once`));
  }
  if (!deliveryId || deliveryId === REPEATED)
    return rejected(problem('missing-delivery-id', `${ids.deliveryId} is missing or empty`));
  if (!eventType || eventType === REPEATED)
    return rejected(problem('missing-event-type', `${ids.eventType} is missing or empty`));
  return { deliveryId, eventType };
}

export async function acceptDelivery(options: IntakeOptions, request: IntakeRequest): Promise<IntakeResult> {
  // An own property only: a source named "constructor" must not reach Object.prototype.
  const secrets = hasOwn(options.sources, request.source) ? options.sources[request.source] : undefined;
  if (!secrets)
    return rejected(
      problem('unknown-source', `no webhook source named ${JSON.stringify(request.source)} is configured`),
    );
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (request.rawBody.length > maxBytes)
    return rejected(problem('payload-too-large', `the body exceeds ${maxBytes} bytes`));

  const headers = checkHeaders(options, request, secrets);
  if ('status' in headers) return headers;
  const payload = parsePayload(request.rawBody);
  if (typeof payload === 'string') return rejected(problem('invalid-payload', payload));
  // The header is not signed; the body's Type is. A relabelled delivery (a paid one passed off as
  // deleted) is refused rather than handed to the consumer under the wrong type.
  if (payload.type !== undefined && payload.type !== headers.eventType) {
    return rejected(
      problem(
        'event-type-mismatch',
        `X-${options.headerName ?? DEFAULT_HEADER_NAME}-Event says ${JSON.stringify(headers.eventType)} but the signed body's Type is ${JSON.stringify(payload.type)}`,
      ),
    );
  }

  // docs/guides/producing-webhooks.md, "What a delivery looks like": the Timestamp is inside the signed bytes, so a
  // captured delivery cannot be replayed once it is older than the tolerance; a far-future one is refused too.
  const now = (options.now ?? (() => new Date()))();
  const tolerance = options.toleranceMs ?? DEFAULT_TOLERANCE_MS;
  const skew = now.getTime() - payload.timestampMs;
  if (Math.abs(skew) > tolerance) {
    return rejected(
      problem(
        'stale-timestamp',
        `Timestamp is ${Math.round(Math.abs(skew) / 1000)} s in the ${skew > 0 ? 'past' : 'future'}; at most ${tolerance / 1000} s is accepted`,
      ),
    );
  }

  const outcome = await options.inbox.record({
    source: request.source,
    deliveryId: headers.deliveryId,
    eventId: payload.id,
    eventType: headers.eventType,
    body: request.rawBody.toString('utf8'),
    via: 'webhook',
    receivedAt: now,
  });
  return outcome === 'duplicate' ? { status: 200, duplicate: true } : { status: 200 };
}

/** The JSON body of a 200 answer. */
export function acceptedBody(result: IntakeResult): { Received: true; Duplicate?: true } {
  return result.duplicate ? { Received: true, Duplicate: true } : { Received: true };
}
