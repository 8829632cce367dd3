// The transactional outbox: an event row and one delivery row per subscribed endpoint, written with
// the caller's transaction, so a change commits with its events or not at all. Nothing is sent here;
// the dispatcher picks the deliveries up after the commit.
import { sql } from 'kysely';
import type { Dialect, Executor } from '../../db/database.ts';
import { toDbTime } from '../../db/codecs.ts';
import { ALL_EVENTS, newId, type EventType } from './events.catalogue.ts';

/** PostgreSQL channel that tells every dispatcher process that deliveries were committed. */
export const WAKE_CHANNEL = 'signet_webhooks';

export interface NewEvent {
  type: EventType;
  data: unknown;
  occurredAt: Date;
  /** Events about one client's own endpoints: only that client sees and receives them. */
  owner?: string;
  /** Order events: the customer, so a user token can read the events of its own orders. */
  customerId?: string;
  orderId?: number;
  /** Deliver only to these endpoints (a ping), rather than to every subscriber. */
  endpointIds?: string[];
}

export interface RecordedEvent {
  eventId: string;
  deliveryIds: string[];
}

export class Outbox {
  readonly #dialect: Dialect;
  readonly #wakeInProcess: () => void;

  constructor(dialect: Dialect, wakeInProcess: () => void) {
    this.#dialect = dialect;
    this.#wakeInProcess = wakeInProcess;
  }

  /** Must run inside the transaction of the change that caused the event. */
  async record(trx: Executor, event: NewEvent): Promise<RecordedEvent> {
    const eventId = newId('evt');
    const at = toDbTime(event.occurredAt);
    const eventRow = {
      id: eventId,
      type: event.type,
      occurred_at: at,
      data: JSON.stringify(event.data),
      owner: event.owner ?? null,
      customer_id: event.customerId ?? null,
      order_id: event.orderId ?? null,
    };
    const endpoints = await subscribedEndpoints(trx, event);
    const deliveries = endpoints.map((endpointId) => ({
      id: newId('dlv'),
      event_id: eventId,
      endpoint_id: endpointId,
      state: 'pending' as const,
      attempt_count: 0,
      retry_index: 0,
      next_attempt_at: at,
      created_at: at,
      updated_at: at,
    }));
    if (deliveries.length === 0) await trx.insertInto('webhook_events').values(eventRow).execute();
    else if (this.#dialect === 'postgres') {
      // One round trip instead of three: the event, its deliveries and the wake-up, in one statement.
      await trx
        .with('event', (db) => db.insertInto('webhook_events').values(eventRow))
        .with('deliveries', (db) => db.insertInto('webhook_deliveries').values(deliveries))
        .selectNoFrom(sql`pg_notify(${WAKE_CHANNEL}, '')`.as('notified'))
        .execute();
    } else {
      await trx.insertInto('webhook_events').values(eventRow).execute();
      await trx.insertInto('webhook_deliveries').values(deliveries).execute();
      await this.announce(trx);
    }
    return { eventId, deliveryIds: deliveries.map((d) => d.id) };
  }

  /**
   * Tells dispatchers that deliveries are due (new ones, or re-queued). PostgreSQL delivers a NOTIFY
   * only when the transaction commits, to every listening dispatcher. SQLite has one connection per
   * process: a dispatcher woken now queues its claim behind this transaction, so it reads the
   * deliveries right after the commit.
   */
  async announce(trx: Executor): Promise<void> {
    if (this.#dialect === 'postgres') await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(trx);
    else this.#wakeInProcess();
  }
}

async function subscribedEndpoints(trx: Executor, event: NewEvent): Promise<string[]> {
  let query = trx.selectFrom('webhook_endpoints').select('id').where('enabled', '=', 1);
  if (event.owner !== undefined) query = query.where('owner', '=', event.owner);
  // Addressed to given endpoints (a ping): they get it whatever types they subscribe to, as the caller asked.
  if (event.endpointIds !== undefined) query = query.where('id', 'in', event.endpointIds);
  // event_types is a JSON array of type names, which contain no quotes: a LIKE on the quoted name is exact.
  else
    query = query.where((eb) =>
      eb.or([
        eb('event_types', '=', JSON.stringify([ALL_EVENTS])),
        eb('event_types', 'like', `%${JSON.stringify(event.type)}%`),
      ]),
    );
  const rows = await query.execute();
  return rows.map((r) => r.id);
}
