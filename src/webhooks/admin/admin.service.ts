// Webhook endpoints across all clients, for Signet's administrators (docs/guides/admin-api.md, Webhook
// endpoints): list and read any client's endpoints, disable or enable them, and count one client's
// deliveries by outcome. The owner's own rules (endpoints.service.ts) stay the owner's; an admin's disable
// is told apart from the owner's and the dispatcher's by its reason, `admin`.
import type { Db, Executor } from '../../db/executor.ts';
import { Problem } from '../../http/problems/problems.ts';
import * as deliveries from '../store/deliveries.repository.ts';
import * as repo from '../store/endpoints.repository.ts';
import type { EndpointRecord } from '../store/endpoints.repository.ts';
import { recordEndpointAudit, type ChangedBy } from '../api/endpoints.service.ts';

interface EndpointPageRequest {
  clientId?: string;
  after?: { createdAt: Date; id: string };
  limit: number;
}

async function getAny(db: Executor, id: string): Promise<EndpointRecord> {
  const endpoint = await repo.findEndpoint(db, id);
  if (!endpoint) throw new Problem('notFound', `webhook endpoint ${id} does not exist`);
  return endpoint;
}

async function list(db: Db, page: EndpointPageRequest): Promise<{ endpoints: EndpointRecord[]; more: boolean }> {
  const rows = await repo.listAllEndpoints(db, { owner: page.clientId, after: page.after, limit: page.limit });
  return { endpoints: rows.slice(0, page.limit), more: rows.length > page.limit };
}

/**
 * Disabled: nothing more is sent and what waits fails (recoverable by the owner later), as when the
 * owner disables it. Idempotent: disabling a disabled endpoint keeps its reason and records nothing.
 */
async function disable(db: Executor, id: string, by: ChangedBy, now: Date): Promise<EndpointRecord> {
  const endpoint = await getAny(db, id);
  if (!endpoint.enabled) return endpoint;
  const updated = (await repo.updateEndpoint(db, id, { enabled: false, disabledReason: 'admin' }, now))!;
  await deliveries.failPending(db, id, 'endpoint disabled (admin)', now);
  await recordEndpointAudit(db, by, 'webhook_endpoint.disabled', updated, { reason: 'admin' });
  return updated;
}

/** Enabled again with a clean slate (its run of failures forgotten), whoever disabled it. */
async function enable(db: Executor, id: string, by: ChangedBy, now: Date): Promise<EndpointRecord> {
  const endpoint = await getAny(db, id);
  if (endpoint.enabled) return endpoint;
  const updated = (await repo.updateEndpoint(
    db,
    id,
    { enabled: true, disabledReason: null, failingSince: null },
    now,
  ))!;
  await recordEndpointAudit(db, by, 'webhook_endpoint.enabled', updated, { was: endpoint.disabledReason });
  return updated;
}

export function createWebhookAdminService({ db }: { db: Db }) {
  return {
    list: (page: EndpointPageRequest) => list(db, page),
    get: (id: string) => getAny(db, id),
    disable: (id: string, by: ChangedBy, now: Date) => db.transaction().execute((trx) => disable(trx, id, by, now)),
    enable: (id: string, by: ChangedBy, now: Date) => db.transaction().execute((trx) => enable(trx, id, by, now)),
    stats: (clientId: string, since: Date, until: Date) => deliveries.deliveryStats(db, clientId, since, until),
  };
}
