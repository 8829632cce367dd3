// Accepting one webhook delivery, independent of any HTTP framework (contract "Events" 4: read the raw
// body, verify the signature, check the identifiers, enqueue, answer 200 at once). The checks run in
// the order of the contract's receiver table, so each failure gets the most specific status.
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
  /** Accepted clock difference, past and future (contract "Limits": 5 minutes). */
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
  headers: Record<string, string | string[] | undefined>;
}

export const DEFAULT_HEADER_NAME = 'Service';
export const DEFAULT_TOLERANCE_MS = 5 * 60_000;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

// RFC 3339 date-time (§5.6); Date.parse alone would also take forms like "2026-01-01" or "Jan 1".
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

interface Payload {
  id: string;
  timestampMs: number;
}

function rejected(p: Problem): IntakeResult {
  return { status: p.status as IntakeResult['status'], problem: p };
}

/** Node lowercases incoming header names; a repeated header arrives as an array and is not trusted. */
function header(headers: IntakeRequest['headers'], name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return typeof value === 'string' ? value : undefined;
}

function hasOwn(record: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(record, key);
}

function parsePayload(rawBody: Buffer): Payload | string {
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return 'the body is not JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body is not a JSON object';
  const { Id: id, Timestamp: timestamp } = body as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') return 'Id is missing or not a non-empty string';
  if (typeof timestamp !== 'string' || !RFC3339.test(timestamp) || Number.isNaN(Date.parse(timestamp))) return 'Timestamp is missing or not an RFC 3339 date-time';
  return { id, timestampMs: Date.parse(timestamp) };
}

function checkHeaders(options: IntakeOptions, request: IntakeRequest, secrets: readonly string[]): IntakeResult | { deliveryId: string; eventType: string } {
  const name = options.headerName ?? DEFAULT_HEADER_NAME;
  const signatureHeader = `X-${name}-Signature-256`;
  const check = verifySignature(request.rawBody, header(request.headers, signatureHeader), secrets);
  if (!check.ok) return rejected(problem('invalid-signature', `${signatureHeader}: ${check.reason.replace('_', ' ')}`));
  // Identifiers are read only after the signature: an unauthenticated caller learns nothing more.
  const deliveryId = header(request.headers, `X-${name}-Delivery`);
  if (!deliveryId) return rejected(problem('missing-delivery-id', `X-${name}-Delivery is missing or empty`));
  const eventType = header(request.headers, `X-${name}-Event`);
  if (!eventType) return rejected(problem('missing-event-type', `X-${name}-Event is missing or empty`));
  return { deliveryId, eventType };
}

export async function acceptDelivery(options: IntakeOptions, request: IntakeRequest): Promise<IntakeResult> {
  // An own property only: a source named "constructor" must not reach Object.prototype.
  const secrets = hasOwn(options.sources, request.source) ? options.sources[request.source] : undefined;
  if (!secrets) return rejected(problem('unknown-source', `no webhook source named ${JSON.stringify(request.source)} is configured`));
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (request.rawBody.length > maxBytes) return rejected(problem('payload-too-large', `the body exceeds ${maxBytes} bytes`));

  const headers = checkHeaders(options, request, secrets);
  if ('status' in headers) return headers;
  const payload = parsePayload(request.rawBody);
  if (typeof payload === 'string') return rejected(problem('invalid-payload', payload));

  // Contract "Authentication" 9: the Timestamp is inside the signed bytes, so a captured delivery
  // cannot be replayed once it is older than the tolerance; a far-future one is refused too.
  const now = (options.now ?? (() => new Date()))();
  const tolerance = options.toleranceMs ?? DEFAULT_TOLERANCE_MS;
  const skew = now.getTime() - payload.timestampMs;
  if (Math.abs(skew) > tolerance) {
    return rejected(problem('stale-timestamp', `Timestamp is ${Math.round(Math.abs(skew) / 1000)} s in the ${skew > 0 ? 'past' : 'future'}; at most ${tolerance / 1000} s is accepted`));
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
