// `signet audit`: the audit trail, newest first, with the filters of GET /api/admin/audit (one query,
// src/audit/audit.repository.ts). `--json` prints an array in snake_case, like the other commands.
// `signet audit verify` walks the hash chain (src/audit/audit-chain.ts) like GET /api/admin/audit/verify.
import { parseArgs } from 'node:util';
import { AUDIT_ACTIONS } from '../audit/audit.ts';
import { listAudit, type AuditRecord } from '../audit/audit.repository.ts';
import { verifyAuditChain, type ChainVerdict } from '../audit/audit-chain.ts';
import { output, UsageError, withDatabase } from './admin.ts';

const AUDIT_USAGE = `usage:
  signet audit [--actor <id>] [--action <action>] [--target <id>] [--since <RFC 3339>] [--until <RFC 3339>]
               [--limit <n, default 100>] [--json]      the audit trail, newest first
  signet audit verify [--json]                           checks the hash chain; exit 1 naming the first broken entry`;

const MAX_LIMIT = 10_000;

function timeOption(value: string | undefined, name: string): Date | undefined {
  if (value === undefined) return undefined;
  // RFC 3339 §5.6 with a zone: a time without one would depend on the operator's machine.
  const time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value) ? new Date(value) : null;
  if (!time || Number.isNaN(time.getTime()))
    throw new UsageError(`--${name} takes an RFC 3339 time with a zone, e.g. 2026-01-31T09:00:00Z`);
  return time;
}

function limitOption(value: string | undefined): number {
  if (value === undefined) return 100;
  const limit = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) throw new UsageError(`--limit takes a number from 1 to ${MAX_LIMIT}`);
  return limit;
}

/** The `--json` shape: snake_case, as docs/reference/cli.md shows. */
function auditJson(entry: AuditRecord) {
  return {
    id: entry.id,
    occurred_at: entry.occurredAt.toISOString(),
    actor_type: entry.actor.type,
    actor_id: entry.actor.id,
    action: entry.action,
    target_type: entry.target?.type ?? null,
    target_id: entry.target?.id ?? null,
    outcome: entry.outcome,
    request_id: entry.requestId,
    source_address: entry.sourceAddress,
    details: entry.details,
  };
}

function auditLine(entry: AuditRecord): string {
  const target = entry.target ? ` ${entry.target.type}:${entry.target.id}` : '';
  const from = entry.sourceAddress ? ` from ${entry.sourceAddress}` : '';
  return `${entry.occurredAt.toISOString()} ${entry.action}${target} by ${entry.actor.type}:${entry.actor.id}${from} (${entry.outcome})`;
}

/** The --json shape of a verification, as GET /api/admin/audit/verify answers it. */
export function verdictJson(verdict: ChainVerdict) {
  return {
    intact: verdict.intact,
    checked: verdict.checked,
    first_id: verdict.firstId,
    last_id: verdict.lastId,
    broken: verdict.broken ? { id: verdict.broken.id, seq: verdict.broken.seq, reason: verdict.broken.reason } : null,
  };
}

const REASONS = {
  altered: 'its content no longer matches its hash (the entry was changed)',
  unlinked: 'it does not link to the entry before it (an entry before it was deleted or inserted)',
  unhashed: 'it carries no hash (written around Signet)',
};

async function verifyCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  const verdict = await withDatabase(({ db }) => verifyAuditChain(db));
  output(
    values.json,
    verdictJson(verdict),
    verdict.broken
      ? `the audit trail is broken at entry ${verdict.broken.id} (seq ${verdict.broken.seq}): ${REASONS[verdict.broken.reason]}; ${verdict.checked} entries before it verified`
      : `the audit trail is intact: ${verdict.checked} entries verified${verdict.firstId ? ` from ${verdict.firstId} to ${verdict.lastId}` : ''}`,
  );
  return verdict.intact ? 0 : 1;
}

export async function auditCommand(args: string[]): Promise<number> {
  if (args[0] === 'verify') return verifyCommand(args.slice(1));
  const { values } = parseArgs({
    args,
    options: {
      actor: { type: 'string' },
      action: { type: 'string' },
      target: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(AUDIT_USAGE);
    return 0;
  }
  if (values.action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(values.action))
    throw new UsageError(`--action: unknown action "${values.action}"; one of ${AUDIT_ACTIONS.join(', ')}`);
  const filters = {
    actor: values.actor,
    action: values.action,
    target: values.target,
    since: timeOption(values.since, 'since'),
    until: timeOption(values.until, 'until'),
  };
  const limit = limitOption(values.limit);
  const { entries } = await withDatabase(({ db }) => listAudit(db, filters, { limit }));
  output(values.json, entries.map(auditJson), entries.map(auditLine).join('\n') || 'no entries');
  return 0;
}
