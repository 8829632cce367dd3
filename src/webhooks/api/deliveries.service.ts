// The delivery log and manual re-sends, for the endpoint's owner only.
import { isStorableTime } from '../../db/codecs.ts';
import type { Executor } from '../../db/executor.ts';
import { Problem } from '../../http/problems/problems.ts';
import { validationProblem } from '../../http/problems/validation.ts';
import { WEBHOOK_PROBLEMS } from './webhooks.errors.ts';
import * as repo from '../store/deliveries.repository.ts';
import type { DeliveryRecord, DeliveryState } from '../store/deliveries.repository.ts';
import { findEndpoint, type EndpointRecord } from '../store/endpoints.repository.ts';
import { getOwnedEndpoint, ownsEndpoint, type EndpointOwner } from './endpoints.service.ts';
import type { Outbox } from '../outbox/events.outbox.ts';

/** A delivery of another client's (or customer's) endpoint answers 404, like the endpoint itself. */
async function getOwnedDelivery(
  db: Executor,
  owner: EndpointOwner,
  id: string,
): Promise<{ delivery: DeliveryRecord; endpoint: EndpointRecord }> {
  const delivery = await repo.findDelivery(db, id);
  const endpoint = delivery && (await findEndpoint(db, delivery.endpointId));
  if (!delivery || !endpoint || !ownsEndpoint(owner, endpoint))
    throw new Problem('notFound', `delivery ${id} does not exist`);
  return { delivery, endpoint };
}

/** A disabled endpoint gets nothing re-sent: a 409 saying how the caller enables it (`with …`). */
function disabled(endpoint: EndpointRecord, enable: string): Problem {
  return new Problem(WEBHOOK_PROBLEMS.webhookState, `endpoint ${endpoint.id} is disabled; enable it ${enable} first`);
}

/**
 * A re-send's rules, the owner's and the operators' alike, once the caller has found the delivery and its
 * endpoint under its own visibility: the same delivery (same X-Service-Delivery, so receivers can dedupe)
 * goes out again with a fresh retry schedule; a disabled endpoint or an already pending delivery is a 409.
 */
export async function requeueOne(
  db: Executor,
  outbox: Outbox,
  deliveryId: string,
  endpoint: EndpointRecord,
  enable: string,
  now: Date,
): Promise<void> {
  if (!endpoint.enabled) throw disabled(endpoint, enable);
  if (!(await repo.requeue(db, deliveryId, now)))
    throw new Problem(WEBHOOK_PROBLEMS.webhookState, `delivery ${deliveryId} is already pending`);
  await outbox.announce(db);
}

/**
 * A recovery's rules, the owner's and the operators' alike: every failed delivery of the endpoint created
 * since `since` is queued again. `since` must be a time both databases store, checked before `find` looks
 * the endpoint up (under the caller's visibility, 404); then a disabled endpoint is a 409 and a `since`
 * in the future a 422.
 */
export async function recoverEndpoint(
  db: Executor,
  outbox: Outbox,
  find: () => Promise<EndpointRecord>,
  since: Date,
  enable: string,
  now: Date,
): Promise<{ endpoint: EndpointRecord; requeued: number }> {
  if (!isStorableTime(since.getTime())) {
    const detail = 'must be a time from year 0001 to 9999, without a leap second';
    throw validationProblem([{ pointer: '/Since', detail }]);
  }
  const endpoint = await find();
  if (!endpoint.enabled) throw disabled(endpoint, enable);
  if (since > now) throw validationProblem([{ pointer: '/Since', detail: 'must not be in the future' }]);
  const requeued = await repo.requeueFailedSince(db, endpoint.id, since, now);
  if (requeued > 0) await outbox.announce(db);
  return { endpoint, requeued };
}

/** How an owner enables its endpoint (webhooks.schemas.ts, the 409's description). */
const OWNER_ENABLE = 'with PATCH {"Enabled": true}';

async function redeliver(
  db: Executor,
  outbox: Outbox,
  owner: EndpointOwner,
  id: string,
  now: Date,
): Promise<DeliveryRecord> {
  const { endpoint } = await getOwnedDelivery(db, owner, id);
  await requeueOne(db, outbox, id, endpoint, OWNER_ENABLE, now);
  return (await repo.findDelivery(db, id))!;
}

// Re-exported: the webhook routes read it from here.
export { isStorableTime };

async function recover(db: Executor, outbox: Outbox, owner: EndpointOwner, endpointId: string, since: Date, now: Date) {
  const find = () => getOwnedEndpoint(db, owner, endpointId);
  return (await recoverEndpoint(db, outbox, find, since, OWNER_ENABLE, now)).requeued;
}

export interface DeliveryPage {
  endpointId: string;
  state?: DeliveryState;
  before?: { createdAt: Date; id: string };
  limit: number;
}

async function listDeliveries(
  db: Executor,
  owner: EndpointOwner,
  page: DeliveryPage,
): Promise<{ items: DeliveryRecord[]; hasMore: boolean }> {
  await getOwnedEndpoint(db, owner, page.endpointId);
  const rows = await repo.listDeliveries(db, { ...page, limit: page.limit + 1 });
  return { items: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/** The delivery log bound once to the database and the outbox; `now` stamps the request. */
export function createDeliveriesService({ db, outbox }: { db: Executor; outbox: Outbox }) {
  return {
    get: (owner: EndpointOwner, id: string) => getOwnedDelivery(db, owner, id),
    attempts: (delivery: DeliveryRecord) => repo.listAttempts(db, delivery.id),
    list: (owner: EndpointOwner, page: DeliveryPage) => listDeliveries(db, owner, page),
    redeliver: (owner: EndpointOwner, id: string, now: Date) => redeliver(db, outbox, owner, id, now),
    recover: (owner: EndpointOwner, endpointId: string, since: Date, now: Date) =>
      recover(db, outbox, owner, endpointId, since, now),
  };
}
