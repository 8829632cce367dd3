// Refused admin requests in the audit trail (docs/security.md, "The audit trail"): every 401 or 403 that
// /api/admin/… answers is recorded (`admin.request_denied`, outcome failure) with who asked, for which
// route and from where, so a probing of the admin API leaves a trace. An attacker must not be able to
// flood the trail with them: each address gets at most PER_ADDRESS entries a window and the instance at
// most IN_TOTAL; what is held back is counted and reported in the next entry that is written.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { recordAudit, type AuditActor } from '../audit/audit.ts';
import type { Db } from '../db/executor.ts';

const PREFIX = '/api/admin/';
const WINDOW_MS = 60_000;
const PER_ADDRESS = 10;
const IN_TOTAL = 100;

export interface DeniedRequestsOptions {
  db: Db;
  now?: () => number;
}

/** A fixed window per address and for the instance; counts what it holds back until it next lets one through. */
export class DeniedRequestBudget {
  #windowStart = 0;
  #total = 0;
  #perAddress = new Map<string, number>();
  #held = 0;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** undefined: hold this one back; otherwise how many were held back since the last one let through. */
  admit(address: string): number | undefined {
    const now = this.#now();
    if (now - this.#windowStart >= WINDOW_MS) {
      this.#windowStart = now;
      this.#total = 0;
      this.#perAddress.clear();
    }
    const fromAddress = this.#perAddress.get(address) ?? 0;
    if (fromAddress >= PER_ADDRESS || this.#total >= IN_TOTAL) {
      this.#held += 1;
      return undefined;
    }
    this.#perAddress.set(address, fromAddress + 1);
    this.#total += 1;
    const held = this.#held;
    this.#held = 0;
    return held;
  }
}

function actorOf(request: FastifyRequest, address: string): AuditActor {
  const principal = request.principal;
  if (!principal) return { type: 'anonymous', id: address };
  return principal.isClient
    ? { type: 'client', id: principal.clientId ?? principal.subject }
    : { type: 'user', id: principal.subject };
}

export function recordDeniedAdminRequests(app: FastifyInstance, options: DeniedRequestsOptions): void {
  const budget = new DeniedRequestBudget(options.now);
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const status = reply.statusCode;
    if ((status !== 401 && status !== 403) || !request.url.startsWith(PREFIX)) return;
    const address = request.clientOrigin.ip;
    const heldBack = budget.admit(address);
    if (heldBack === undefined) return;
    try {
      await recordAudit(options.db, {
        actor: actorOf(request, address),
        action: 'admin.request_denied',
        target: { type: 'route', id: `${request.method} ${request.routeOptions.url ?? request.url.split('?')[0]}` },
        outcome: 'failure',
        requestId: request.id,
        sourceAddress: address,
        details: { status, held_back_before: heldBack },
      });
    } catch (err) {
      // The answer has gone; a trail that cannot be written now is logged, never a reason to fail anything.
      request.log.warn({ err }, 'a denied admin request could not be recorded in the audit trail');
    }
  });
}
