// Who may scrape /metrics (docs/operations/monitoring.md, "Metrics"): METRICS_ALLOW, a list of addresses
// and CIDR ranges, and METRICS_TOKEN, a bearer token (RFC 6750 §2.1). Each applies when set, wherever the
// metrics are served; with both, a scrape must pass both. One decision for the API port and the metrics
// listener alike, each answering it in its own way (metrics.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIPv6 } from 'node:net';
import { addToBlockList } from '../../config/parsers.ts';
import { nodeAddress } from '../admission/forwarded.ts';
import type { ProblemKey } from '../problems/problems.ts';

export interface MetricsAccessOptions {
  token: string | undefined;
  allow: string[] | undefined;
}

/** Why a scrape is refused: the problem to answer with, and its headers. */
export interface ScrapeRefusal {
  problem: Extract<ProblemKey, 'unauthorized' | 'invalidToken' | 'forbidden'>;
  detail: string;
  headers: Record<string, string>;
}

/** The decision for one scrape: undefined lets it through. */
export type MetricsAccess = (
  address: string | undefined,
  authorization: string | undefined,
) => ScrapeRefusal | undefined;

const REALM = 'metrics';

export function metricsAccess(options: MetricsAccessOptions): MetricsAccess {
  const allowed = options.allow && blockListOf(options.allow);
  const expected = options.token === undefined ? undefined : digest(options.token);
  return (address, authorization) => {
    if (allowed && !isAllowed(allowed, address)) {
      return { problem: 'forbidden', detail: 'this address may not read the metrics (METRICS_ALLOW)', headers: {} };
    }
    if (expected) return tokenRefusal(expected, authorization);
    return undefined;
  };
}

function blockListOf(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) addToBlockList(list, entry);
  return list;
}

/**
 * `::ffff:10.0.0.5` is how a dual-stack socket (METRICS_HOST=::) reports an IPv4 peer, which METRICS_ALLOW
 * names `10.0.0.5`: nodeAddress reduces it to that form, the one the logs and rate limits use too.
 */
function isAllowed(list: BlockList, address: string | undefined): boolean {
  const plain = address && nodeAddress(address);
  if (!plain) return false;
  return list.check(plain, isIPv6(plain) ? 'ipv6' : 'ipv4');
}

/**
 * RFC 6750 §3.1: no error code when no token was sent, `invalid_token` for a wrong one. Both sides are
 * hashed first so that timingSafeEqual compares equal lengths and the time says nothing about the token.
 */
function tokenRefusal(expected: Buffer, authorization: string | undefined): ScrapeRefusal | undefined {
  const sent = bearerToken(authorization);
  if (sent === undefined) {
    return {
      problem: 'unauthorized',
      detail: 'send the metrics token: Authorization: Bearer <METRICS_TOKEN>',
      headers: { 'www-authenticate': `Bearer realm="${REALM}"` },
    };
  }
  if (timingSafeEqual(digest(sent), expected)) return undefined;
  return {
    problem: 'invalidToken',
    detail: 'the metrics token is not the one configured (METRICS_TOKEN)',
    headers: { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"` },
  };
}

/** The token of `Bearer <token>`; the scheme is case-insensitive (RFC 9110 §11.1). */
function bearerToken(authorization: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  return match?.[1];
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
