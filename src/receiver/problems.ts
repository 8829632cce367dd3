// The receiver's error answers: RFC 9457 problem details (docs/guides/receiving-webhooks.md). The kit has no
// public base URL of its own to host documentation at, so types are tag URIs (RFC 4151), which
// RFC 9457 §3.1.1 names as the choice for identifiers that are not meant to be dereferenced.

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const TYPE_BASE = 'tag:signet.dev,2026:receiver/problems';

const CATALOGUE = {
  'invalid-payload': { status: 400, title: 'The webhook body is not a valid event' },
  'missing-delivery-id': { status: 400, title: 'The delivery identifier header is missing or empty' },
  'missing-event-type': { status: 400, title: 'The event type header is missing or empty' },
  'repeated-header': { status: 400, title: 'A webhook header appears more than once' },
  'event-type-mismatch': { status: 400, title: 'The event type header disagrees with the signed body' },
  'bad-request': { status: 400, title: 'Bad request' },
  'invalid-signature': { status: 401, title: 'The webhook signature is missing or invalid' },
  'stale-timestamp': { status: 401, title: 'The webhook timestamp is outside the accepted window' },
  'unknown-source': { status: 404, title: 'No webhook source with this name is configured' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'payload-too-large': { status: 413, title: 'The webhook body is too large' },
  'internal-error': { status: 500, title: 'Internal server error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemSlug = keyof typeof CATALOGUE;

export function problem(slug: ProblemSlug, detail: string): Problem {
  const { status, title } = CATALOGUE[slug];
  return { type: `${TYPE_BASE}/${slug}`, title, status, detail };
}
