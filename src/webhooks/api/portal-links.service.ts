// Portal links (docs/guides/portal.md, "Portal links"): a client with webhooks:manage asks for a one-time URL
// that opens the console's integrator portal scoped to that client, for a customer without a Signet
// account (like an embeddable application portal). The token is 256 random bits, base64url; only its
// SHA-256 is stored (a fast hash suffices for a value nobody can guess). A link works once, for 15 minutes.
import { createHash, randomBytes } from 'node:crypto';
import { recordAudit } from '../../audit/audit.ts';
import type { Db } from '../../db/executor.ts';
import { findPortalLink, insertPortalLink, purgePortalLinks, usePortalLink } from '../store/portal-links.repository.ts';
import type { ChangedBy } from './endpoints.service.ts';

const PORTAL_LINK_TTL_MS = 15 * 60_000;
/** Where the console serves the portal for a link (src/console/). */
const PORTAL_LINK_PATH = '/console/portal-links/';
const TOKEN_BYTES = 32;
/** 32 bytes in base64url, without padding (RFC 4648 §5). */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Where a request came from; the actor is always the client the link is for. */
type From = Omit<ChangedBy, 'actor'>;

export function hashPortalToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

interface IssuedPortalLink {
  url: string;
  expiresAt: Date;
}

/** A new link for `clientId`, recorded as portal_link.issued with the link's expiry (never the token). */
export async function issuePortalLink(
  db: Db,
  input: { clientId: string; baseUrl: string; now: Date },
  by: From,
): Promise<IssuedPortalLink> {
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const expiresAt = new Date(input.now.getTime() + PORTAL_LINK_TTL_MS);
  await db.transaction().execute(async (trx) => {
    // Links expired for a day are of no use to anyone: cleared here rather than by a timer.
    await purgePortalLinks(trx, new Date(input.now.getTime() - 86_400_000));
    await insertPortalLink(trx, {
      tokenHash: hashPortalToken(token),
      clientId: input.clientId,
      createdAt: input.now,
      expiresAt,
    });
    await recordAudit(trx, {
      ...by,
      actor: { type: 'client', id: input.clientId },
      action: 'portal_link.issued',
      target: { type: 'client', id: input.clientId },
      details: { expires_at: expiresAt.toISOString() },
      at: input.now,
    });
  });
  return { url: `${input.baseUrl}${PORTAL_LINK_PATH}${token}`, expiresAt };
}

/**
 * For the console: uses a link once. One UPDATE … WHERE unused AND unexpired RETURNING decides, so two
 * concurrent uses give exactly one success; a used, expired, unknown or malformed token is undefined.
 * The use is recorded as portal_link.used in the same transaction, with the client as actor.
 */
export async function consumePortalLink(
  db: Db,
  token: string,
  now: Date,
  by: From = {},
): Promise<{ clientId: string } | undefined> {
  if (!TOKEN_PATTERN.test(token)) return undefined;
  return db.transaction().execute(async (trx) => {
    const clientId = await usePortalLink(trx, hashPortalToken(token), now);
    if (clientId === undefined) return undefined;
    await recordAudit(trx, {
      ...by,
      actor: { type: 'client', id: clientId },
      action: 'portal_link.used',
      target: { type: 'client', id: clientId },
      at: now,
    });
    return { clientId };
  });
}

/**
 * For the console, without using the link: `usable` (unused, unexpired: its client), `spent` (used or
 * expired, still on file: 410 Gone) or `unknown` (never issued, malformed or purged: 404).
 */
export async function portalLinkState(
  db: Db,
  token: string,
  now: Date,
): Promise<{ state: 'usable'; clientId: string } | { state: 'spent' | 'unknown' }> {
  if (!TOKEN_PATTERN.test(token)) return { state: 'unknown' };
  const link = await findPortalLink(db, hashPortalToken(token));
  if (!link) return { state: 'unknown' };
  if (link.usedAt !== undefined || link.expiresAt <= now) return { state: 'spent' };
  return { state: 'usable', clientId: link.clientId };
}
