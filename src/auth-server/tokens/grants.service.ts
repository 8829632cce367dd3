// Grants and sessions as an admin sees them (docs/guides/admin-api.md, Grants and sessions): oidc-provider's
// Grant and Session models, read from oidc_payloads through the columns the adapter fills from each
// payload (account_id, client_id: indexed since migration 0002); a session ends as a logout ends it.
//
// Nothing here shows a credential: a grant's id is no token (nothing is redeemed with it), and a session
// is named by its `uid`, not by its id, which is the value of the session cookie.
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import type { Db, Executor } from '../../db/executor.ts';
import type { DbTime } from '../../db/schema.ts';
import { Problem } from '../../http/problems/problems.ts';
import { revokeGrant } from '../provider/oidc-adapter.ts';

/** Who asks, for the audit trail: the admin API's caller or the CLI. */
export type ChangedBy = Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>;

export interface GrantView {
  id: string;
  clientId: string;
  accountId: string;
  scopes: string[];
  createdAt: Date | null;
  expiresAt: Date | null;
}

export interface SessionView {
  id: string;
  accountId: string;
  clientIds: string[];
  createdAt: Date | null;
  expiresAt: Date | null;
}

interface PageRequest {
  limit: number;
  /** The id the previous page ended with. */
  after?: string;
}

interface PayloadRow {
  id: string;
  uid: string | null;
  payload: string;
  expires_at: DbTime | null;
}

/** The oidc-provider payload members read here (lib/models/grant.js, lib/models/session.js). */
interface StoredPayload {
  accountId?: string;
  clientId?: string;
  iat?: number;
  exp?: number;
  loginTs?: number;
  openid?: { scope?: string };
  resources?: Record<string, string>;
  authorizations?: Record<string, { grantId?: string; persistsLogout?: boolean }>;
}

const seconds = (value: number | undefined): Date | null => (typeof value === 'number' ? new Date(value * 1000) : null);
const dbTime = (value: DbTime | null): Date | null => (value === null ? null : fromDbTime(value));

/** Every scope the grant holds: the OpenID scopes and those of each resource (RFC 8707), once each. */
function grantedScopes(payload: StoredPayload): string[] {
  const words = [payload.openid?.scope ?? '', ...Object.values(payload.resources ?? {})].join(' ').split(' ');
  return [...new Set(words.filter(Boolean))];
}

function toGrant(row: PayloadRow): GrantView {
  const payload = JSON.parse(row.payload) as StoredPayload;
  return {
    id: row.id,
    clientId: payload.clientId ?? '',
    accountId: payload.accountId ?? '',
    scopes: grantedScopes(payload),
    createdAt: seconds(payload.iat),
    expiresAt: dbTime(row.expires_at) ?? seconds(payload.exp),
  };
}

function toSession(row: PayloadRow): SessionView {
  const payload = JSON.parse(row.payload) as StoredPayload;
  return {
    id: row.uid ?? '',
    accountId: payload.accountId ?? '',
    clientIds: Object.keys(payload.authorizations ?? {}),
    createdAt: seconds(payload.loginTs ?? payload.iat),
    expiresAt: dbTime(row.expires_at) ?? seconds(payload.exp),
  };
}

function live(db: Executor, model: 'Grant' | 'Session', now: Date) {
  return db
    .selectFrom('oidc_payloads')
    .select(['id', 'uid', 'payload', 'expires_at'])
    .where('model', '=', model)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', toDbTime(now))]));
}

/** Grants of one user or of one client, in id order (stable under inserts, so cursors never skip). */
async function listGrants(
  db: Executor,
  by: { accountId: string } | { clientId: string },
  page: PageRequest,
): Promise<{ grants: GrantView[]; more: boolean }> {
  let query = live(db, 'Grant', new Date());
  query = 'accountId' in by ? query.where('account_id', '=', by.accountId) : query.where('client_id', '=', by.clientId);
  if (page.after !== undefined) query = query.where('id', '>', page.after);
  const rows = await query
    .orderBy('id')
    .limit(page.limit + 1)
    .execute();
  return { grants: rows.slice(0, page.limit).map(toGrant), more: rows.length > page.limit };
}

/** Signed-in sessions of one user (a session without an account is a sign-in not finished yet). */
async function listSessions(
  db: Executor,
  accountId: string,
  page: PageRequest,
): Promise<{ sessions: SessionView[]; more: boolean }> {
  let query = live(db, 'Session', new Date()).where('account_id', '=', accountId).where('uid', 'is not', null);
  if (page.after !== undefined) query = query.where('uid', '>', page.after);
  const rows = await query
    .orderBy('uid')
    .limit(page.limit + 1)
    .execute();
  return { sessions: rows.slice(0, page.limit).map(toSession), more: rows.length > page.limit };
}

async function findGrant(db: Executor, grantId: string): Promise<GrantView | undefined> {
  const row = await db
    .selectFrom('oidc_payloads')
    .select(['id', 'uid', 'payload', 'expires_at'])
    .where('model', '=', 'Grant')
    .where('id', '=', grantId)
    .executeTakeFirst();
  return row && toGrant(row);
}

/**
 * Deletes the grant and every row bound to it (refresh tokens, codes, the records of its JWT access
 * tokens), so a refresh fails with invalid_grant (RFC 6749 §5.2) and introspection and UserInfo answer
 * inactive at once. JWT access tokens already issued stay valid at the API until they expire
 * (ACCESS_TOKEN_TTL): it verifies them locally (docs/guides/admin-api.md, "Grants and sessions").
 */
async function revokeOne(db: Db, grantId: string, by: ChangedBy): Promise<GrantView> {
  return db.transaction().execute(async (trx) => {
    const grant = await findGrant(trx, grantId);
    if (!grant) throw new Problem('notFound', `grant ${grantId} does not exist`);
    await revokeGrant(trx, grantId);
    await recordAudit(trx, {
      ...by,
      action: 'grant.revoked',
      target: { type: 'grant', id: grantId },
      details: { client_id: grant.clientId, account_id: grant.accountId },
    });
    return grant;
  });
}

/**
 * Ends the session as a logout does (OpenID RP-Initiated Logout, oidc-provider's end_session): the
 * session goes, so the next authorization request asks the user to sign in again, and so do the grants
 * it authorized that do not persist across logouts. With this configuration (provider.ts
 * expiresWithSession: false) refresh tokens outlive the browser session, so every grant persists:
 * revoking the grant is what ends them.
 */
async function endSession(db: Db, sessionUid: string, by: ChangedBy): Promise<{ revokedGrants: string[] }> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('oidc_payloads')
      .select(['id', 'payload'])
      .where('model', '=', 'Session')
      .where('uid', '=', sessionUid)
      .executeTakeFirst();
    if (!row) throw new Problem('notFound', `session ${sessionUid} does not exist`);
    const payload = JSON.parse(row.payload) as StoredPayload;
    const revokedGrants = Object.values(payload.authorizations ?? {})
      .filter((a) => a.grantId && !a.persistsLogout)
      .map((a) => a.grantId!);
    await trx.deleteFrom('oidc_payloads').where('model', '=', 'Session').where('id', '=', row.id).execute();
    for (const grantId of revokedGrants) await revokeGrant(trx, grantId);
    await recordAudit(trx, {
      ...by,
      action: 'session.ended',
      target: { type: 'session', id: sessionUid },
      details: { account_id: payload.accountId ?? null, revoked_grants: revokedGrants },
    });
    return { revokedGrants };
  });
}

/** The grant and session rules bound once to the database. */
export function createGrantsService({ db }: { db: Db }) {
  return {
    listForUser: (accountId: string, page: PageRequest) => listGrants(db, { accountId }, page),
    listForClient: (clientId: string, page: PageRequest) => listGrants(db, { clientId }, page),
    sessionsOf: (accountId: string, page: PageRequest) => listSessions(db, accountId, page),
    revoke: (grantId: string, by: ChangedBy) => revokeOne(db, grantId, by),
    endSession: (sessionUid: string, by: ChangedBy) => endSession(db, sessionUid, by),
  };
}
