// Initial access tokens for dynamic client registration (RFC 7591 §3: "the authorization server MAY require
// an initial access token"), issued by an admin with `signet client registration-token` or
// POST /api/admin/registration-tokens (docs/guides/admin-api.md, Registration tokens). The token is shown
// once; its row in registration_tokens holds only its SHA-256 (like every bearer value, oidc-adapter.ts),
// the API scopes it allows (within the registration policy, never an admin scope), how many clients it may
// register (default 1), its expiry and whether it was revoked. oidc-provider finds it through
// RegistrationTokenAdapter below; a registration spends one use (consumeRegistrationToken) once the
// client's metadata passed every rule (registration.ts).
import { randomBytes } from 'node:crypto';
import { recordAudit, type AuditActor, type AuditEntry } from '../../audit/audit.ts';
import { toDbTime, fromDbTime } from '../../db/codecs.ts';
import type { Db, Executor } from '../../db/executor.ts';
import type { RegistrationTokensTable } from '../../db/schema.ts';
import { Problem } from '../../http/problems/problems.ts';
import { OIDC_SCOPES } from './clients.repository.ts';
import { ClientRuleError } from './clients.service.ts';
import { hashTokenId } from '../provider/oidc-adapter.ts';
import type { AdapterPayload } from 'oidc-provider';
import type { RegistrationPolicy } from './registration-policy.ts';
import { pastPosition } from '../../db/keyset.ts';

/** The policy every registration runs last: Signet's client rules (registration.ts). */
export const CLIENT_RULES_POLICY = 'signet:client-rules';
/** One policy per scope a token allows; it only marks the scope as allowed for the rules policy. */
export const SCOPE_POLICY_PREFIX = 'signet:scope:';

/** Longest life of an initial access token: it lets anyone holding it register clients. */
export const MAX_REGISTRATION_TOKEN_SECONDS = 90 * 24 * 3600;
/** Most clients one token may register; the default is one (one developer, one client). */
export const MAX_REGISTRATION_TOKEN_USES = 1000;

interface RegistrationTokenRequest {
  expiresInSeconds: number;
  /** The API scopes a client registered with the token may have; OpenID scopes are always allowed. */
  scopes: readonly string[];
  /** How many clients the token may register (default 1). */
  maxUses?: number | undefined;
  /** What the token is for, shown in the list (never a secret). */
  description?: string | undefined;
  policy: RegistrationPolicy;
}

export interface RegistrationTokenRecord {
  id: string;
  scopes: string[];
  maxUses: number;
  useCount: number;
  description: string | null;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  /** `active` until used up, expired or revoked. */
  status: 'active' | 'used_up' | 'expired' | 'revoked';
}

export interface IssuedRegistrationToken extends RegistrationTokenRecord {
  token: string;
}

type ChangedBy = Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>;

/** `30m`, `12h`, `7d`, `3600s` or a number of seconds → seconds; undefined when not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  const seconds = Number(match[1]) * unit;
  return seconds > 0 ? seconds : undefined;
}

const validation = (pointer: string, detail: string) =>
  new Problem('validation', detail, { errors: [{ pointer, detail }] });

function checkRequest(request: RegistrationTokenRequest): string[] {
  const { expiresInSeconds, maxUses = 1, description, policy } = request;
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 60 || expiresInSeconds > MAX_REGISTRATION_TOKEN_SECONDS)
    throw validation(
      '/expires_in',
      `the token must live between 1 minute and ${MAX_REGISTRATION_TOKEN_SECONDS / 86_400} days (60 to ${MAX_REGISTRATION_TOKEN_SECONDS} seconds)`,
    );
  if (!Number.isInteger(maxUses) || maxUses < 1 || maxUses > MAX_REGISTRATION_TOKEN_USES)
    throw validation('/max_uses', `max_uses must be between 1 and ${MAX_REGISTRATION_TOKEN_USES}`);
  if (description !== undefined && (description.length > 200 || /\p{Cc}/u.test(description)))
    throw validation('/description', 'description: at most 200 characters, no control characters');
  const scopes = [...new Set(request.scopes)];
  scopes.forEach((scope, i) => {
    if (policy.privilegedScopes.includes(scope))
      throw new ClientRuleError(
        'scope',
        () => `${scope} is never given to a self-registered client: create such a client with signet client create`,
        i,
      );
    if (!policy.scopes.includes(scope) && !OIDC_SCOPES.includes(scope))
      throw new ClientRuleError(
        'scope',
        () =>
          `${scope} is not a scope the registration policy allows (REGISTRATION_SCOPES): use ${policy.scopes.join(', ') || 'none'}`,
        i,
      );
  });
  return scopes;
}

export async function issueRegistrationToken(
  db: Db,
  request: RegistrationTokenRequest,
  by: ChangedBy,
): Promise<IssuedRegistrationToken> {
  const scopes = checkRequest(request);
  // 256 random bits, like oidc-provider's own opaque tokens (bitsOfOpaqueRandomness).
  const token = randomBytes(32).toString('base64url');
  const now = new Date();
  const row: RegistrationTokensTable = {
    id: `rt_${randomBytes(12).toString('hex')}`,
    token_hash: hashTokenId(token),
    scope: scopes.join(' '),
    max_uses: request.maxUses ?? 1,
    use_count: 0,
    description: request.description ?? null,
    created_by: actorName(by.actor),
    created_at: toDbTime(now),
    expires_at: toDbTime(new Date(now.getTime() + request.expiresInSeconds * 1000)),
    revoked_at: null,
  };
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('registration_tokens').values(row).execute();
    await recordAudit(trx, {
      ...by,
      action: 'registration_token.issued',
      target: { type: 'registration_token', id: row.id },
      details: { scope: row.scope, expires_in_seconds: request.expiresInSeconds, max_uses: row.max_uses },
    });
  });
  return { ...toRecord(row, now), token };
}

export interface RegistrationTokenPage {
  tokens: RegistrationTokenRecord[];
  more: boolean;
}

/** Newest first; `after` is the last token of the previous page. */
export async function listRegistrationTokens(
  db: Executor,
  query: { limit: number; after?: { createdAt: string; id: string } | undefined },
): Promise<RegistrationTokenPage> {
  let select = db.selectFrom('registration_tokens').selectAll();
  const after = query.after;
  if (after) {
    select = select.where(pastPosition('<', { createdAt: new Date(after.createdAt), id: after.id }));
  }
  const rows = await select
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(query.limit + 1)
    .execute();
  const now = new Date();
  return { tokens: rows.slice(0, query.limit).map((row) => toRecord(row, now)), more: rows.length > query.limit };
}

export async function findRegistrationToken(db: Executor, id: string): Promise<RegistrationTokenRecord | undefined> {
  const row = await db.selectFrom('registration_tokens').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toRecord(row, new Date());
}

/**
 * Revokes the token at once: no client can be registered with it afterwards. Clients it registered stay
 * (delete them with `signet client delete`). Revoking a revoked token changes nothing and is not audited again.
 */
export async function revokeRegistrationToken(db: Db, id: string, by: ChangedBy): Promise<RegistrationTokenRecord> {
  return db.transaction().execute(async (trx) => {
    const now = new Date();
    const revoked = await trx
      .updateTable('registration_tokens')
      .set({ revoked_at: toDbTime(now) })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    const row = await trx.selectFrom('registration_tokens').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new Problem('notFound', `no registration token ${id}`);
    if (Number(revoked.numUpdatedRows) === 1)
      await recordAudit(trx, {
        ...by,
        action: 'registration_token.revoked',
        target: { type: 'registration_token', id },
        details: { use_count: row.use_count, max_uses: row.max_uses },
      });
    return toRecord(row, now);
  });
}

/** The usable token's row by the value presented: not revoked, not expired, uses left. */
async function findUsable(db: Executor, token: string, now: Date) {
  return db
    .selectFrom('registration_tokens')
    .selectAll()
    .where('token_hash', '=', hashTokenId(token))
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', toDbTime(now))
    .whereRef('use_count', '<', 'max_uses')
    .executeTakeFirst();
}

/**
 * Spends one use of the token, atomically: one conditional UPDATE, so concurrent registrations with a
 * one-use token cannot both pass. Returns the token's id, or undefined when it cannot be used any more.
 */
export async function consumeRegistrationToken(db: Executor, token: string): Promise<string | undefined> {
  const hash = hashTokenId(token);
  const result = await db
    .updateTable('registration_tokens')
    .set((eb) => ({ use_count: eb('use_count', '+', 1) }))
    .where('token_hash', '=', hash)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', toDbTime(new Date()))
    .whereRef('use_count', '<', 'max_uses')
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return undefined;
  const row = await db.selectFrom('registration_tokens').select('id').where('token_hash', '=', hash).executeTakeFirst();
  return row?.id;
}

/**
 * oidc-provider's InitialAccessToken model over registration_tokens (read only: tokens are issued above).
 * A token is found only while usable; its policies are the scopes it allows, then Signet's client rules.
 */
export class RegistrationTokenAdapter {
  readonly #db: Executor;
  constructor(db: Executor) {
    this.#db = db;
  }
  async find(token: string): Promise<AdapterPayload | undefined> {
    const row = await findUsable(this.#db, token, new Date());
    if (!row) return undefined;
    const scopes = row.scope.split(' ').filter(Boolean);
    return {
      jti: token,
      kind: 'InitialAccessToken',
      iat: Math.floor(fromDbTime(row.created_at).getTime() / 1000),
      exp: Math.floor(fromDbTime(row.expires_at).getTime() / 1000),
      // The rules policy runs last, once the scope policies have said what the token allows.
      policies: [...scopes.map((scope) => `${SCOPE_POLICY_PREFIX}${scope}`), CLIENT_RULES_POLICY],
    };
  }
  async upsert(): Promise<void> {
    throw new Error('registration tokens are issued with signet client registration-token or the admin API');
  }
  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
  async consume(): Promise<void> {}
  async destroy(): Promise<void> {}
  async revokeByGrantId(): Promise<void> {}
}

function actorName(actor: AuditActor): string {
  return `${actor.type}:${actor.id}`;
}

function toRecord(row: RegistrationTokensTable, now: Date): RegistrationTokenRecord {
  const expiresAt = fromDbTime(row.expires_at);
  const revokedAt = row.revoked_at === null ? null : fromDbTime(row.revoked_at).toISOString();
  const status = revokedAt
    ? 'revoked'
    : Number(row.use_count) >= Number(row.max_uses)
      ? 'used_up'
      : expiresAt.getTime() <= now.getTime()
        ? 'expired'
        : 'active';
  return {
    id: row.id,
    scopes: row.scope.split(' ').filter(Boolean),
    maxUses: Number(row.max_uses),
    useCount: Number(row.use_count),
    description: row.description,
    createdBy: row.created_by,
    createdAt: fromDbTime(row.created_at).toISOString(),
    expiresAt: expiresAt.toISOString(),
    revokedAt,
    status,
  };
}
