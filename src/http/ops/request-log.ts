// What the request log keeps of a URL (docs/security.md, "What the logs never contain"): the path and the
// query's names, but not the values of the parameters that carry a credential or a one-time value: an
// authorization code and `state` (RFC 6749 §4.1.2, §10.5, §10.12), a PKCE verifier (RFC 7636), tokens
// and token hints (RFC 6750 §2.3, RFC 7009, OIDC RP-Initiated Logout §2), client secrets. A log line then
// cannot be replayed as a sign-in, nor correlate a browser's sign-in with its state. A portal link's one-time token
// is masked the same way (a log must not open a portal).
import type { FastifyRequest } from 'fastify';

const SECRET_PARAMETERS = new Set([
  'code',
  'state',
  'code_verifier',
  'access_token',
  'refresh_token',
  'id_token',
  'id_token_hint',
  'logout_hint',
  'token',
  'client_secret',
  'client_assertion',
  'registration_access_token',
  'password',
]);

export const REDACTED = '[redacted]';

/** `url` with the values of secret query parameters replaced; names are matched decoded and case-blind. */
export function redactQuery(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const pairs = url.slice(start + 1).split('&');
  let changed = false;
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i]!;
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    const rawName = pair.slice(0, eq);
    if (isSecret(rawName)) {
      pairs[i] = `${rawName}=${REDACTED}`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, start)}?${pairs.join('&')}` : url;
}

function isSecret(rawName: string): boolean {
  let name: string;
  try {
    name = decodeURIComponent(rawName.replace(/\+/g, ' '));
  } catch {
    return true; // undecodable: nothing can tell what it is, so its value is not kept
  }
  return SECRET_PARAMETERS.has(name.trim().toLowerCase());
}

/**
 * Fastify's request fields, with a portal link's one-time token masked (a log must not open a portal) and
 * the values of OAuth codes, tokens and state taken out of the query (http/ops/request-log.ts).
 */
export function serializeRequest(req: FastifyRequest) {
  return {
    method: req.method,
    url: redactQuery(maskPortalLink(req.url)),
    version: typeof req.headers['accept-version'] === 'string' ? req.headers['accept-version'] : undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** The router matches the decoded path, so a percent-encoded link is masked as well. */
export function maskPortalLink(url: string): string {
  let path = url.split('?')[0]!;
  try {
    path = decodeURIComponent(path);
  } catch {
    // not decodable: the router answers 400 or 404, and the raw form is checked below
  }
  return path.startsWith('/console/portal-links/') ? '/console/portal-links/[token]' : url;
}
