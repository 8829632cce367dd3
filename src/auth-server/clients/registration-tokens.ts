// Initial access tokens for dynamic client registration (RFC 7591 §3: "the authorization server MAY require
// an initial access token"), issued by an admin with `signet client registration-token` or
// POST /api/admin/registration-tokens. The token is shown once; the row holds only its SHA-256 (like every
// bearer value, oidc-adapter.ts), its expiry, and the registration policies oidc-provider runs when it is
// presented: Signet's client rules, and one policy per scope the token allows (registration.ts).
import { randomBytes } from 'node:crypto';
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import type { Db } from '../../db/executor.ts';
import { Problem } from '../../http/problems/problems.ts';
import { OIDC_SCOPES } from './clients.repository.ts';
import { ClientRuleError } from './clients.service.ts';
import { hashTokenId, KyselyAdapter } from '../provider/oidc-adapter.ts';

/** The policy every registration runs last: Signet's client rules (registration.ts). */
export const CLIENT_RULES_POLICY = 'signet:client-rules';
/** One policy per scope a token allows; it only marks the scope as allowed for the rules policy. */
export const SCOPE_POLICY_PREFIX = 'signet:scope:';

/** Longest life of an initial access token: it lets anyone holding it register clients. */
export const MAX_REGISTRATION_TOKEN_SECONDS = 90 * 24 * 3600;

interface RegistrationTokenRequest {
  expiresInSeconds: number;
  /** The API scopes a client registered with the token may have; OpenID scopes are always allowed. */
  scopes: readonly string[];
  apiScopes: readonly string[];
}

interface IssuedRegistrationToken {
  token: string;
  expiresAt: string;
  scopes: string[];
}

/** `30m`, `12h`, `7d`, `3600s` or a number of seconds → seconds; undefined when not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  const seconds = Number(match[1]) * unit;
  return seconds > 0 ? seconds : undefined;
}

export async function issueRegistrationToken(
  db: Db,
  request: RegistrationTokenRequest,
  by: Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>,
): Promise<IssuedRegistrationToken> {
  const { expiresInSeconds } = request;
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 60 || expiresInSeconds > MAX_REGISTRATION_TOKEN_SECONDS)
    throw new Problem(
      'validation',
      `the token must live between 1 minute and ${MAX_REGISTRATION_TOKEN_SECONDS / 86_400} days`,
      {
        errors: [{ pointer: '/expires_in', detail: 'between 60 and 7776000 seconds' }],
      },
    );
  const scopes = [...new Set(request.scopes)];
  scopes.forEach((scope, i) => {
    if (!request.apiScopes.includes(scope) && !OIDC_SCOPES.includes(scope))
      throw new ClientRuleError(
        'scope',
        () => `unknown scope ${scope}: use ${[...request.apiScopes, ...OIDC_SCOPES].join(', ')}`,
        i,
      );
  });
  // 256 random bits, like oidc-provider's own opaque tokens (bitsOfOpaqueRandomness).
  const token = randomBytes(32).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    iat: now,
    exp: now + expiresInSeconds,
    kind: 'InitialAccessToken',
    // The rules policy runs last, once the scope policies have said what the token allows.
    policies: [...scopes.map((scope) => `${SCOPE_POLICY_PREFIX}${scope}`), CLIENT_RULES_POLICY],
  };
  await db.transaction().execute(async (trx) => {
    await new KyselyAdapter(trx, 'InitialAccessToken').upsert(token, payload, expiresInSeconds);
    await recordAudit(trx, {
      ...by,
      action: 'registration_token.issued',
      // The hash names the token without being it (oidc-adapter.ts stores the row under it).
      target: { type: 'registration_token', id: hashTokenId(token) },
      details: { scope: scopes.join(' '), expires_in_seconds: expiresInSeconds },
    });
  });
  return { token, expiresAt: new Date((now + expiresInSeconds) * 1000).toISOString(), scopes };
}
