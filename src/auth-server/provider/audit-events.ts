// The authorization server's entries in the audit trail (docs/security.md, "The audit trail"): sign-ins, consent,
// revoked grants and refresh-token reuse. Nothing typed by the user is stored but the outcome: never the
// password, and not the e-mail typed for an account that does not exist (users type their password into
// the e-mail field often enough); such an attempt is recorded with the actor `user`/`unknown`, and the
// source address and time correlate a series of them.
import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { errors, KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import { recordAudit, SYSTEM_ACTOR, type AuditActor, type AuditEntry } from '../../audit/audit.ts';
import type { Executor } from '../../db/executor.ts';

/** The actor of a sign-in attempt on an account that does not exist: nothing the user typed. */
const UNKNOWN_USER: AuditActor = { type: 'user', id: 'unknown' };

type Where = Pick<AuditEntry, 'requestId' | 'sourceAddress'>;

/** The request id and the client address (TRUST_PROXY honoured, src/http/admission/forwarded.ts) of a Fastify request. */
export function requestWhere(request: FastifyRequest): Where {
  return { requestId: request.id, sourceAddress: request.clientOrigin.ip };
}

type SignInFailure = 'unknown_account' | 'wrong_password' | 'account_disabled';

/**
 * signin.succeeded or signin.failed: `userId` is the account signed in to or attempted (absent when the
 * typed e-mail matches no account), `failure` why it failed.
 */
export function recordSignIn(
  executor: Executor,
  where: Where,
  attempt: { userId: string | undefined; clientId: string; failure?: SignInFailure },
): Promise<void> {
  const { userId, clientId, failure } = attempt;
  return recordAudit(executor, {
    ...where,
    actor: userId === undefined ? UNKNOWN_USER : { type: 'user', id: userId },
    action: failure ? 'signin.failed' : 'signin.succeeded',
    target: userId === undefined ? undefined : { type: 'user', id: userId },
    outcome: failure ? 'failure' : 'success',
    details: { client_id: clientId, ...(failure ? { reason: failure } : {}) },
  });
}

interface GrantLike {
  accountId?: string;
  clientId?: string;
  openid?: { scope?: string };
  resources?: Record<string, string>;
}

/** Every scope the grant holds now: OpenID Connect ones and those of each resource (RFC 8707). */
function grantedScopes(grant: GrantLike | undefined): string[] {
  const scopes = [grant?.openid?.scope ?? '', ...Object.values(grant?.resources ?? {})]
    .flatMap((s) => s.split(' '))
    .filter(Boolean);
  return [...new Set(scopes)].sort();
}

/**
 * consent.granted, after the grant was saved. oidc-provider saves grants through its adapter, outside any
 * transaction of ours, so the entry is written right after the save rather than in the same transaction.
 */
export async function recordConsent(
  executor: Executor,
  provider: Provider,
  where: Where,
  consent: { accountId: string; clientId: string; grantId: string; automatic: boolean },
): Promise<void> {
  const grant = (await provider.Grant.find(consent.grantId)) as GrantLike | undefined;
  await recordAudit(executor, {
    ...where,
    actor: { type: 'user', id: consent.accountId },
    action: 'consent.granted',
    target: { type: 'grant', id: consent.grantId },
    details: {
      client_id: consent.clientId,
      scopes: grantedScopes(grant),
      // First-party clients skip the consent page: the grant is given without the user being asked.
      automatic: consent.automatic,
    },
  });
}

/** The slice of oidc-provider's koa context the listeners read. */
interface EventContext {
  req: IncomingMessage & { id?: string };
  ip?: string;
  oidc?: {
    route?: string;
    params?: Record<string, unknown>;
    client?: { clientId: string };
    session?: { accountId?: string };
    entities?: Record<string, { accountId?: string; clientId?: string; grantId?: string } | undefined>;
  };
}

function eventWhere(ctx: EventContext): Where {
  return { requestId: ctx.req.id, sourceAddress: ctx.ip };
}

/** Why oidc-provider revoked a grant, from the route that did it. */
function revocationReason(ctx: EventContext): string {
  const route = ctx.oidc?.route ?? '';
  if (route === 'revocation') return 'revoked'; // RFC 7009
  if (route.startsWith('end_session')) return 'logout'; // OIDC RP-Initiated Logout 1.0
  if (route === 'token') {
    // RFC 9700 §4.14.2: a rotated refresh token presented again; §4.5.3 (RFC 6749 §4.1.2) a code replayed.
    return ctx.oidc?.params?.grant_type === 'refresh_token' ? 'refresh_token_reuse' : 'code_replay';
  }
  return route || 'unknown';
}

/** The grant's account and client, from what the request had loaded (the grant itself is gone by now). */
function grantParties(ctx: EventContext): { accountId?: string; clientId?: string } {
  const entities = ctx.oidc?.entities ?? {};
  const holders = [entities.Grant, entities.RefreshToken, entities.AuthorizationCode, entities.AccessToken];
  return {
    accountId: holders.find((e) => e?.accountId)?.accountId ?? ctx.oidc?.session?.accountId,
    clientId: ctx.oidc?.client?.clientId ?? holders.find((e) => e?.clientId)?.clientId,
  };
}

function revokedBy(ctx: EventContext, reason: string, accountId: string | undefined): AuditActor {
  if (reason === 'logout' && accountId) return { type: 'user', id: accountId };
  if (reason === 'revoked' && ctx.oidc?.client) return { type: 'client', id: ctx.oidc.client.clientId };
  return SYSTEM_ACTOR; // reuse and replay: Signet revokes the grant on its own (RFC 9700 §4.14.2)
}

async function grantRevoked(executor: Executor, ctx: EventContext, grantId: string, reason?: string): Promise<void> {
  const why = reason ?? revocationReason(ctx);
  const { accountId, clientId } = grantParties(ctx);
  await recordAudit(executor, {
    ...eventWhere(ctx),
    actor: revokedBy(ctx, why, accountId),
    action: 'grant.revoked',
    target: { type: 'grant', id: grantId },
    details: { reason: why, client_id: clientId ?? null, account_id: accountId ?? null },
  });
}

/** The refresh-token reuse messages: oidc-provider's own check, and the adapter's atomic consume losing a race. */
const REUSED = new Set(['refresh token already used', 'the token was already used']);
/** The adapter's consume lost a race (oidc-adapter.ts): it revoked the grant itself, without oidc-provider's event. */
const LOST_RACE = 'the token was already used';

async function grantError(executor: Executor, ctx: EventContext, err: { error_detail?: unknown }): Promise<void> {
  const detail = typeof err.error_detail === 'string' ? err.error_detail : '';
  if (!REUSED.has(detail)) return;
  const entities = ctx.oidc?.entities ?? {};
  const grantId = (entities.RefreshToken ?? entities.AuthorizationCode ?? entities.Grant)?.grantId;
  if (detail === LOST_RACE && grantId) await grantRevoked(executor, ctx, grantId);
  if (ctx.oidc?.params?.grant_type !== 'refresh_token') return;
  const { accountId, clientId } = grantParties(ctx);
  await recordAudit(executor, {
    ...eventWhere(ctx),
    // The caller that presented the used token: the client it was issued to authenticated (RFC 6749 §6).
    actor: clientId ? { type: 'client', id: clientId } : SYSTEM_ACTOR,
    action: 'refresh_token.reuse_detected',
    target: grantId ? { type: 'grant', id: grantId } : undefined,
    outcome: 'failure',
    details: { client_id: clientId ?? null, account_id: accountId ?? null },
  });
}

/**
 * oidc-provider's events fire after the fact, outside any transaction (its adapter writes row by row), so
 * these entries are written directly; a failure to write one is logged, never thrown into the provider.
 */
export function auditProviderEvents(provider: Provider, executor: Executor, onError: (err: unknown) => void): void {
  provider.on('grant.revoked', (ctx: KoaContextWithOIDC, grantId: string) => {
    grantRevoked(executor, ctx as unknown as EventContext, grantId).catch(onError);
  });
  provider.on('grant.error', (ctx: KoaContextWithOIDC, err: errors.OIDCProviderError) => {
    grantError(executor, ctx as unknown as EventContext, err).catch(onError);
  });
}
