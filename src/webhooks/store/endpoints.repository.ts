// SQL for webhook endpoints. Secrets stay sealed here; the service opens them only to sign.
import type { Executor } from '../../db/executor.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import type { WebhookEndpointsTable } from '../../db/schema.ts';
import { pastPosition } from '../../db/keyset.ts';

/** manual: by its owner; admin: by a Signet administrator; gone, failing: by the dispatcher. */
export type DisabledReason = 'manual' | 'admin' | 'gone' | 'failing';

export interface EndpointRecord {
  id: string;
  owner: string;
  /** The customer of `owner` it belongs to (a customer-scoped portal made it); null: the client's own. */
  customerId: string | null;
  url: string;
  description: string;
  eventTypes: string[];
  enabled: boolean;
  disabledReason: DisabledReason | null;
  sealedSecret: string;
  sealedPreviousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

function toRecord(r: WebhookEndpointsTable): EndpointRecord {
  return {
    id: r.id,
    owner: r.owner,
    customerId: r.customer_id ?? null,
    url: r.url,
    description: r.description,
    eventTypes: JSON.parse(r.event_types) as string[],
    enabled: Number(r.enabled) === 1,
    disabledReason: r.disabled_reason as DisabledReason | null,
    sealedSecret: r.secret,
    sealedPreviousSecret: r.previous_secret,
    previousSecretExpiresAt: r.previous_secret_expires_at === null ? null : fromDbTime(r.previous_secret_expires_at),
    failingSince: r.failing_since === null ? null : fromDbTime(r.failing_since),
    createdAt: fromDbTime(r.created_at),
    updatedAt: fromDbTime(r.updated_at),
  };
}

interface NewEndpoint {
  id: string;
  owner: string;
  customerId: string | null;
  url: string;
  description: string;
  eventTypes: string[];
  sealedSecret: string;
  now: Date;
}

export async function insertEndpoint(db: Executor, e: NewEndpoint): Promise<EndpointRecord> {
  const at = toDbTime(e.now);
  const row = await db
    .insertInto('webhook_endpoints')
    .values({
      id: e.id,
      owner: e.owner,
      customer_id: e.customerId,
      url: e.url,
      description: e.description,
      event_types: JSON.stringify(e.eventTypes),
      enabled: 1,
      disabled_reason: null,
      secret: e.sealedSecret,
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: at,
      updated_at: at,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRecord(row);
}

export async function findEndpoint(db: Executor, id: string): Promise<EndpointRecord | undefined> {
  const row = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toRecord(row);
}

/** The most recently sealed secret, if any endpoint exists: what start-up checks the key against. */
export async function latestSealedSecret(db: Executor): Promise<{ endpointId: string; sealed: string } | undefined> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'secret'])
    .orderBy('updated_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row && { endpointId: row.id, sealed: row.secret };
}

/** The client's endpoints, or only those of one of its customers (`customerId`). */
export async function listEndpoints(db: Executor, owner: string, customerId?: string): Promise<EndpointRecord[]> {
  let query = db.selectFrom('webhook_endpoints').selectAll().where('owner', '=', owner);
  if (customerId !== undefined) query = query.where('customer_id', '=', customerId);
  const rows = await query.orderBy('created_at').orderBy('id').execute();
  return rows.map(toRecord);
}

/**
 * Every client's endpoints (the admin API), in (created_at, id) order from just after `after`, one
 * more than `limit` to tell whether another page follows.
 */
export async function listAllEndpoints(
  db: Executor,
  options: { owner?: string; after?: { createdAt: Date; id: string }; limit: number },
): Promise<EndpointRecord[]> {
  let query = db.selectFrom('webhook_endpoints').selectAll();
  if (options.owner !== undefined) query = query.where('owner', '=', options.owner);
  const after = options.after;
  if (after) query = query.where(pastPosition('>', after));
  const rows = await query
    .orderBy('created_at')
    .orderBy('id')
    .limit(options.limit + 1)
    .execute();
  return rows.map(toRecord);
}

/** The client's own endpoints (`customerId` null), or those of one of its customers. */
export async function countEndpoints(db: Executor, owner: string, customerId: string | null): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('owner', '=', owner)
    .where('customer_id', customerId === null ? 'is' : '=', customerId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface EndpointChanges {
  url?: string;
  description?: string;
  eventTypes?: string[];
  enabled?: boolean;
  disabledReason?: DisabledReason | null;
  sealedSecret?: string;
  sealedPreviousSecret?: string | null;
  previousSecretExpiresAt?: Date | null;
  failingSince?: Date | null;
}

export async function updateEndpoint(
  db: Executor,
  id: string,
  changes: EndpointChanges,
  now: Date,
): Promise<EndpointRecord | undefined> {
  const row = await db
    .updateTable('webhook_endpoints')
    .set({
      url: changes.url,
      description: changes.description,
      event_types: changes.eventTypes && JSON.stringify(changes.eventTypes),
      enabled: changes.enabled === undefined ? undefined : changes.enabled ? 1 : 0,
      disabled_reason: changes.disabledReason,
      secret: changes.sealedSecret,
      previous_secret: changes.sealedPreviousSecret,
      previous_secret_expires_at:
        changes.previousSecretExpiresAt === undefined
          ? undefined
          : changes.previousSecretExpiresAt && toDbTime(changes.previousSecretExpiresAt),
      failing_since:
        changes.failingSince === undefined ? undefined : changes.failingSince && toDbTime(changes.failingSince),
      updated_at: toDbTime(now),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return row && toRecord(row);
}

/**
 * Swaps in a new secret, keeping the current one as the previous, unless a previous one is still in
 * its overlap or another rotation got there first; true when it did.
 */
export async function rotateSecret(
  db: Executor,
  id: string,
  rotation: { sealedSecret: string; sealedCurrent: string; previousExpiresAt: Date },
  now: Date,
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({
      secret: rotation.sealedSecret,
      previous_secret: rotation.sealedCurrent,
      previous_secret_expires_at: toDbTime(rotation.previousExpiresAt),
      updated_at: toDbTime(now),
    })
    .where('id', '=', id)
    .where('secret', '=', rotation.sealedCurrent)
    .where((eb) =>
      eb.or([eb('previous_secret_expires_at', 'is', null), eb('previous_secret_expires_at', '<=', toDbTime(now))]),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deleteEndpoint(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
}

/** A success ends the endpoint's run of failures. */
export async function clearFailing(db: Executor, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: null })
    .where('id', 'in', ids)
    .where('failing_since', 'is not', null)
    .execute();
}

/** Starts (or continues) the endpoint's run of failures; returns when it began. */
export async function markFailing(db: Executor, id: string, now: Date): Promise<EndpointRecord | undefined> {
  const row = await db
    .updateTable('webhook_endpoints')
    .set((eb) => ({ failing_since: eb.fn.coalesce('failing_since', eb.val(toDbTime(now))) }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return row && toRecord(row);
}
