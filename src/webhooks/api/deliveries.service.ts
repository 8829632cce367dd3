// The delivery log and manual re-sends, for the endpoint's owner only.
import { isStorableTime } from '../../db/codecs.ts';
import type { Executor } from '../../db/database.ts';
import { Problem } from '../../http/problems.ts';
import { validationProblem } from '../../http/validation.ts';
import { WEBHOOK_PROBLEMS } from './webhooks.errors.ts';
import * as repo from '../store/deliveries.repository.ts';
import type { DeliveryRecord, DeliveryState } from '../store/deliveries.repository.ts';
import { findEndpoint, type EndpointRecord } from '../store/endpoints.repository.ts';
import { getOwnedEndpoint } from './endpoints.service.ts';
import type { Outbox } from '../outbox/events.outbox.ts';

/** A delivery of another client's endpoint answers 404, like the endpoint itself. */
async function getOwnedDelivery(
  db: Executor,
  owner: string,
  id: string,
): Promise<{ delivery: DeliveryRecord; endpoint: EndpointRecord }> {
  const delivery = await repo.findDelivery(db, id);
  const endpoint = delivery && (await findEndpoint(db, delivery.endpointId));
  if (!delivery || !endpoint || endpoint.owner !== owner)
    throw new Problem('notFound', `delivery ${id} does not exist`);
  return { delivery, endpoint };
}

/** The same delivery (same X-Service-Delivery, so receivers can dedupe) goes out again, with a fresh retry schedule. */
async function redeliver(db: Executor, outbox: Outbox, owner: string, id: string, now: Date): Promise<DeliveryRecord> {
  const { endpoint } = await getOwnedDelivery(db, owner, id);
  if (!endpoint.enabled)
    throw new Problem(WEBHOOK_PROBLEMS.webhookState, `endpoint ${endpoint.id} is disabled; enable it first`);
  if (!(await repo.requeue(db, id, now)))
    throw new Problem(WEBHOOK_PROBLEMS.webhookState, `delivery ${id} is already pending`);
  await outbox.announce(db);
  return (await repo.findDelivery(db, id))!;
}

// Re-exported: the webhook routes read it from here.
export { isStorableTime };

async function recover(
  db: Executor,
  outbox: Outbox,
  owner: string,
  endpointId: string,
  since: Date,
  now: Date,
): Promise<number> {
  if (!isStorableTime(since.getTime())) {
    const detail = 'must be a time from year 0001 to 9999, without a leap second';
    throw validationProblem([{ pointer: '/Since', detail }]);
  }
  const endpoint = await getOwnedEndpoint(db, owner, endpointId);
  if (!endpoint.enabled)
    throw new Problem(
      WEBHOOK_PROBLEMS.webhookState,
      `endpoint ${endpointId} is disabled; enable it with PATCH {"Enabled": true} first`,
    );
  if (since > now) throw validationProblem([{ pointer: '/Since', detail: 'must not be in the future' }]);
  const requeued = await repo.requeueFailedSince(db, endpointId, since, now);
  if (requeued > 0) await outbox.announce(db);
  return requeued;
}

export interface DeliveryPage {
  endpointId: string;
  state?: DeliveryState;
  before?: { createdAt: Date; id: string };
  limit: number;
}

async function listDeliveries(
  db: Executor,
  owner: string,
  page: DeliveryPage,
): Promise<{ items: DeliveryRecord[]; hasMore: boolean }> {
  await getOwnedEndpoint(db, owner, page.endpointId);
  const rows = await repo.listDeliveries(db, { ...page, limit: page.limit + 1 });
  return { items: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/** The delivery log bound once to the database and the outbox; `now` stamps the request. */
export function createDeliveriesService({ db, outbox }: { db: Executor; outbox: Outbox }) {
  return {
    get: (owner: string, id: string) => getOwnedDelivery(db, owner, id),
    attempts: (delivery: DeliveryRecord) => repo.listAttempts(db, delivery.id),
    list: (owner: string, page: DeliveryPage) => listDeliveries(db, owner, page),
    redeliver: (owner: string, id: string, now: Date) => redeliver(db, outbox, owner, id, now),
    recover: (owner: string, endpointId: string, since: Date, now: Date) =>
      recover(db, outbox, owner, endpointId, since, now),
  };
}

export type DeliveriesService = ReturnType<typeof createDeliveriesService>;
