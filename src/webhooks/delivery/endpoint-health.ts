// After a batch of attempts: a success ends an endpoint's run of failures; a failure starts or extends
// it. 410 Gone disables the endpoint at once; failing without a break for WEBHOOK_DISABLE_AFTER
// disables it too, and the owner is told with a `webhook.endpoint.disabled` event.
import { recordAudit, SYSTEM_ACTOR } from '../../audit/audit.ts';
import type { Executor } from '../../db/executor.ts';
import type { Outcome } from '../store/dispatch.repository.ts';
import * as deliveries from '../store/deliveries.repository.ts';
import {
  clearFailing,
  markFailing,
  updateEndpoint,
  type DisabledReason,
  type EndpointRecord,
} from '../store/endpoints.repository.ts';
import type { Outbox } from '../outbox/events.outbox.ts';

export async function settleEndpoints(
  trx: Executor,
  outbox: Outbox,
  batch: Outcome[],
  options: { disableAfterMs: number; now: Date },
): Promise<void> {
  const succeeded = new Set(batch.filter((o) => o.result.ok).map((o) => o.endpointId));
  await clearFailing(trx, [...succeeded]);
  const failing = new Map<string, boolean>(); // endpoint → answered 410
  for (const o of batch) {
    if (o.result.ok || succeeded.has(o.endpointId)) continue;
    failing.set(o.endpointId, (failing.get(o.endpointId) ?? false) || o.result.gone);
  }
  for (const [endpointId, gone] of failing) {
    const endpoint = await markFailing(trx, endpointId, options.now);
    if (!endpoint?.enabled) continue;
    const failingFor = options.now.getTime() - (endpoint.failingSince ?? options.now).getTime();
    if (gone) await disableEndpoint(trx, outbox, endpoint, 'gone', options.now);
    else if (failingFor >= options.disableAfterMs) await disableEndpoint(trx, outbox, endpoint, 'failing', options.now);
  }
}

/** The dispatcher's decision (410 Gone, or failing for too long): disable, fail what waits, tell the owner. */
async function disableEndpoint(
  trx: Executor,
  outbox: Outbox,
  endpoint: EndpointRecord,
  reason: Exclude<DisabledReason, 'manual' | 'admin'>,
  now: Date,
): Promise<void> {
  await updateEndpoint(trx, endpoint.id, { enabled: false, disabledReason: reason }, now);
  await deliveries.failPending(trx, endpoint.id, `endpoint disabled (${reason})`, now);
  // Signet itself decided, in the transaction that records the batch (docs/security.md, "The audit trail").
  await recordAudit(trx, {
    actor: SYSTEM_ACTOR,
    action: 'webhook_endpoint.disabled',
    target: { type: 'webhook_endpoint', id: endpoint.id },
    details: { client_id: endpoint.owner, reason, url: endpoint.url },
    at: now,
  });
  await outbox.record(trx, {
    type: 'webhook.endpoint.disabled',
    data: {
      EndpointId: endpoint.id,
      Url: endpoint.url,
      Reason: reason,
      FailingSinceUtc: (endpoint.failingSince ?? now).toISOString(),
    },
    occurredAt: now,
    owner: endpoint.owner,
    // A customer's endpoint: the notice reaches that customer's endpoints and the client's own, no other customer's.
    customerId: endpoint.customerId ?? undefined,
  });
}
