// After a batch of attempts: a success ends an endpoint's run of failures; a failure starts or extends
// it. 410 Gone disables the endpoint at once; failing without a break for WEBHOOK_DISABLE_AFTER
// disables it too, and the owner is told with a `webhook.endpoint.disabled` event.
import type { Executor } from '../db/database.ts';
import type { Outcome } from './dispatch.repository.ts';
import { clearFailing, markFailing } from './endpoints.repository.ts';
import { disableEndpoint } from './endpoints.service.ts';
import type { Outbox } from './events.outbox.ts';

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
