// An audit entry as the outside world reads it (docs/security.md, "The audit trail"): the items of GET
// /api/admin/audit and the Data of `audit.entry` events (src/webhooks/outbox/audit-relay.ts) are this one shape.
import type { AuditRecord } from './audit.repository.ts';

export function auditView(entry: AuditRecord) {
  return {
    Id: entry.id,
    OccurredAtUtc: entry.occurredAt.toISOString(),
    Actor: { Type: entry.actor.type, Id: entry.actor.id },
    Action: entry.action,
    Target: entry.target && { Type: entry.target.type, Id: entry.target.id },
    Outcome: entry.outcome,
    RequestId: entry.requestId,
    SourceAddress: entry.sourceAddress,
    Details: entry.details,
  };
}
