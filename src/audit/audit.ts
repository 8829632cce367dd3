// The audit trail (docs/security.md, "The audit trail"): one append-only row per security-relevant action, written
// on the executor of the change it records, so the entry and the change commit or roll back together.
// An entry names who did what to which target, when, from where and with what outcome; it never holds a
// secret, a password or a token (details carry plain facts: names, scopes, counts).
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import type { Executor } from '../db/executor.ts';
import { toDbTime } from '../db/codecs.ts';
import { chainHead, entryHash } from './audit-chain.ts';

/** Every action the trail records. Adding one: here, and a row in the audit table of docs/security.md. */
export const AUDIT_ACTIONS = [
  'client.created',
  'client.updated',
  'client.deleted',
  'client.secret_rotated',
  'client.registered', // RFC 7591 dynamic registration
  'registration_token.issued',
  'registration_token.revoked',
  'user.created',
  'user.updated',
  'user.role_changed',
  'user.password_set',
  'user.disabled',
  'user.enabled',
  'user.deleted',
  'keys.rotated',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.disabled',
  'webhook_endpoint.enabled',
  'webhook_endpoint.recovered', // by an admin (the owner's recover is not audited)
  'webhook_delivery.redelivered', // by an admin (the owner's redeliver is not audited)
  'portal_link.issued',
  'portal_link.used',
  'portal_link.revoked', // by an admin (the sessions it opened end with it)
  'portal_session.ended', // by an admin
  'signin.succeeded',
  'signin.failed',
  'consent.granted',
  'grant.revoked',
  'session.ended',
  'refresh_token.reuse_detected',
  'admin.request_denied', // a 401 or 403 of /api/admin/…, rate limited (src/operator/denied-requests.ts)
] as const;
type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type ActorType = 'user' | 'client' | 'cli' | 'system' | 'anonymous';

/** Who acted: a user (`sub`), a client (`client_id`), the CLI (with the OS user), Signet itself, or a caller without a valid token (its address). */
export interface AuditActor {
  type: ActorType;
  id: string;
}

export interface AuditEntry {
  actor: AuditActor;
  action: AuditAction;
  target?: { type: string; id: string };
  outcome?: 'success' | 'failure';
  requestId?: string;
  sourceAddress?: string;
  /** Plain facts about the change; never a secret, password or token. */
  details?: Readonly<Record<string, string | number | boolean | null | readonly string[]>>;
  at?: Date;
}

/** The CLI as actor: `cli` with the OS user that ran the command. */
export function cliActor(): AuditActor {
  let name = 'unknown';
  try {
    name = userInfo().username;
  } catch {
    // no passwd entry (a container's arbitrary uid): still an entry, without a name
  }
  return { type: 'cli', id: name };
}

/** Signet itself (the automatic disable of a failing webhook endpoint, retention). */
export const SYSTEM_ACTOR: AuditActor = { type: 'system', id: 'signet' };

/**
 * Appends the entry, chained to the one before it (audit-chain.ts). Inside the caller's transaction, so
 * the entry commits or rolls back with its change; in a transaction of its own when given the database.
 */
export async function recordAudit(executor: Executor, entry: AuditEntry): Promise<void> {
  if (!executor.isTransaction) {
    await executor.transaction().execute((trx) => recordAudit(trx, entry));
    return;
  }
  const row = {
    id: `aud_${randomBytes(12).toString('hex')}`,
    occurred_at: toDbTime(entry.at ?? new Date()),
    actor_type: entry.actor.type,
    actor_id: entry.actor.id,
    action: entry.action,
    target_type: entry.target?.type ?? null,
    target_id: entry.target?.id ?? null,
    outcome: entry.outcome ?? 'success',
    request_id: entry.requestId ?? null,
    source_address: entry.sourceAddress ?? null,
    details: JSON.stringify(entry.details ?? {}),
  };
  const prevHash = await chainHead(executor);
  await executor
    .insertInto('audit_log')
    .values({ ...row, prev_hash: prevHash, hash: entryHash(row, prevHash) })
    .execute();
}
