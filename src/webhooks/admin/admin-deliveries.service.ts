// The delivery log and event browser across every client, for Signet's operators (docs/guides/admin-api.md, Delivery
// log and events). Redeliver and recover run the owner's rules (requeueOne and recoverEndpoint of
// deliveries.service.ts): the same 404, 409 and 422 answers; what differs is that any client's delivery is reachable
// and that the admin is recorded in the audit trail as the actor.
import type { Db, Executor } from '../../db/executor.ts';
import { Problem } from '../../http/problems/problems.ts';
import { recordAudit } from '../../audit/audit.ts';
import type { Outbox } from '../outbox/events.outbox.ts';
import * as log from '../store/admin-log.repository.ts';
import type { AdminDeliveryFilter, AdminDeliveryRecord, AdminEventFilter } from '../store/admin-log.repository.ts';
import * as deliveries from '../store/deliveries.repository.ts';
import { findEndpoint, type EndpointRecord } from '../store/endpoints.repository.ts';
import { requeueOne, recoverEndpoint } from '../api/deliveries.service.ts';
import type { ChangedBy } from '../api/endpoints.service.ts';

interface AdminDeliveryQuery extends Omit<AdminDeliveryFilter, 'endpointIds' | 'limit'> {
  endpointId?: string;
  clientId?: string;
  limit: number;
}

/** The endpoints the query narrows to: undefined for all of them, [] when endpoint and client disagree. */
async function endpointsOf(db: Executor, query: AdminDeliveryQuery): Promise<readonly string[] | undefined> {
  if (query.clientId === undefined) return query.endpointId === undefined ? undefined : [query.endpointId];
  const owned = await log.endpointIdsOf(db, query.clientId);
  return query.endpointId === undefined ? owned : owned.filter((id) => id === query.endpointId);
}

async function listDeliveries(db: Executor, query: AdminDeliveryQuery) {
  const { endpointId: _e, clientId: _c, limit, ...filter } = query;
  const endpointIds = await endpointsOf(db, query);
  const rows = await log.listAdminDeliveries(db, { ...filter, endpointIds, limit: limit + 1 });
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}

async function getDelivery(db: Executor, id: string): Promise<AdminDeliveryRecord> {
  const delivery = await log.findAdminDelivery(db, id);
  if (!delivery) throw new Problem('notFound', `delivery ${id} does not exist`);
  return delivery;
}

async function getEndpoint(db: Executor, id: string): Promise<EndpointRecord> {
  const endpoint = await findEndpoint(db, id);
  if (!endpoint) throw new Problem('notFound', `webhook endpoint ${id} does not exist`);
  return endpoint;
}

/** How an operator enables an endpoint (deliveries.schemas.ts, the 409's description). */
function adminEnable(endpointId: string): string {
  return `with POST /api/admin/webhook-endpoints/${endpointId}/enable`;
}

/** The same delivery goes out again under the owner's rules (requeueOne); the admin is the audit actor. */
async function redeliver(db: Executor, outbox: Outbox, id: string, by: ChangedBy, now: Date) {
  const delivery = await getDelivery(db, id);
  const endpoint = await getEndpoint(db, delivery.endpointId);
  await requeueOne(db, outbox, id, endpoint, adminEnable(endpoint.id), now);
  await recordAudit(db, {
    ...by,
    action: 'webhook_delivery.redelivered',
    target: { type: 'webhook_delivery', id },
    details: { client_id: endpoint.owner, endpoint_id: endpoint.id, event_id: delivery.eventId },
    at: now,
  });
  return getDelivery(db, id);
}

/** The endpoint's failed deliveries since `since` are queued again under the owner's rules (recoverEndpoint). */
async function recover(db: Executor, outbox: Outbox, endpointId: string, since: Date, by: ChangedBy, now: Date) {
  const find = () => getEndpoint(db, endpointId);
  const { endpoint, requeued } = await recoverEndpoint(db, outbox, find, since, adminEnable(endpointId), now);
  await recordAudit(db, {
    ...by,
    action: 'webhook_endpoint.recovered',
    target: { type: 'webhook_endpoint', id: endpointId },
    details: { client_id: endpoint.owner, since: since.toISOString(), requeued },
    at: now,
  });
  return requeued;
}

async function listEvents(db: Executor, filter: AdminEventFilter) {
  const rows = await log.listAdminEvents(db, { ...filter, limit: filter.limit + 1 });
  const items = rows.slice(0, filter.limit);
  const states = await log.deliveryStatesOf(
    db,
    items.map((e) => e.id),
  );
  return {
    items: items.map((e) => ({ event: e, deliveries: states.get(e.id)! })),
    hasMore: rows.length > filter.limit,
  };
}

async function getEvent(db: Executor, id: string) {
  const event = await log.findAdminEvent(db, id);
  if (!event) throw new Problem('notFound', `event ${id} does not exist (or is older than the retention period)`);
  const states = await log.deliveryStatesOf(db, [id]);
  return { event, deliveries: states.get(id)! };
}

/** Bound once to the database and the outbox (which wakes the dispatchers after a re-queue). */
export function createAdminDeliveriesService({ db, outbox }: { db: Db; outbox: Outbox }) {
  return {
    list: (query: AdminDeliveryQuery) => listDeliveries(db, query),
    get: (id: string) => getDelivery(db, id),
    attempts: (id: string) => deliveries.listAttempts(db, id),
    redeliver: (id: string, by: ChangedBy, now: Date) =>
      db.transaction().execute((trx) => redeliver(trx, outbox, id, by, now)),
    recover: (endpointId: string, since: Date, by: ChangedBy, now: Date) =>
      db.transaction().execute((trx) => recover(trx, outbox, endpointId, since, by, now)),
    events: (filter: AdminEventFilter) => listEvents(db, filter),
    event: (id: string) => getEvent(db, id),
  };
}
