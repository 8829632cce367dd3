// Webhook rows written straight into the tables (an endpoint; a due delivery with its endpoint and event), for
// dispatcher tests that need exact times or many endpoints without going through the API.
import { randomBytes } from 'node:crypto';
import { toDbTime } from '../../src/db/codecs.ts';
import type { Db } from '../../src/db/database.ts';
import type { SecretBox } from '../../src/webhooks/store/secrets.ts';

export interface SeededDelivery {
  url: string;
  /** The endpoint's signing secret; a fresh one when not given. */
  secret?: string;
  /** When the event occurred; `dueAt` when not given. */
  occurredAt?: Date;
  /** When the delivery is due (and the rows were created); now when not given. */
  dueAt?: Date;
}

export interface SeededEndpoint {
  id: string;
  url: string;
  /** The stored (sealed) secret. */
  secret: string;
  eventTypes?: string[];
  owner?: string;
  /** created_at and updated_at; now when not given. */
  at?: Date;
}

/** An enabled endpoint of `owner` (client-a), subscribed to `eventTypes` (every type). */
export async function seedEndpoint(db: Db, endpoint: SeededEndpoint): Promise<void> {
  const at = toDbTime(endpoint.at ?? new Date());
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: endpoint.id,
      owner: endpoint.owner ?? 'client-a',
      url: endpoint.url,
      description: '',
      event_types: JSON.stringify(endpoint.eventTypes ?? ['*']),
      enabled: 1,
      disabled_reason: null,
      secret: endpoint.secret,
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: at,
      updated_at: at,
    })
    .execute();
}

/** Returns the delivery id. */
export async function seedDelivery(db: Db, box: SecretBox, seed: SeededDelivery): Promise<string> {
  const dueAt = seed.dueAt ?? new Date();
  const now = toDbTime(dueAt);
  const endpointId = `whep_${randomBytes(16).toString('hex')}`;
  const eventId = `evt_${randomBytes(16).toString('hex')}`;
  const id = `dlv_${randomBytes(16).toString('hex')}`;
  const secret = seed.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
  await seedEndpoint(db, { id: endpointId, url: seed.url, secret: box.seal(endpointId, secret), at: dueAt });
  await db
    .insertInto('webhook_events')
    .values({
      id: eventId,
      type: 'order.created',
      occurred_at: toDbTime(seed.occurredAt ?? dueAt),
      data: '{"Id":1}',
      owner: null,
      customer_id: null,
      order_id: null,
    })
    .execute();
  await db
    .insertInto('webhook_deliveries')
    .values({
      id,
      event_id: eventId,
      endpoint_id: endpointId,
      state: 'pending',
      attempt_count: 0,
      retry_index: 0,
      next_attempt_at: now,
      lease_owner: null,
      lease_until: null,
      last_status_code: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}
