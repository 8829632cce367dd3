// The transactional outbox: an event row and one delivery row per subscribed endpoint, written with
// the caller's transaction, so a change commits with its events or not at all. Nothing is sent here;
// the dispatcher picks the deliveries up after the commit.
import { sql, type Insertable, type RawBuilder } from 'kysely';
import { compiledStatement, placeholderRow, type ParamOf } from '../../db/compiled-statement.ts';
import type { WebhookDeliveriesTable, WebhookEventsTable } from '../../db/schema.ts';
import { executorDialect, type Dialect, type Executor } from '../../db/database.ts';
import { toDbTime } from '../../db/codecs.ts';
import { ALL_EVENTS, idTimePart, newId, type OutboxEventType } from './events.catalogue.ts';
import { randomHex } from './random-hex.ts';
import { afterCommit } from '../../db/after-commit.ts';
import { handOff, type FreshEndpoint, type HandOffTarget, type LeaseColumns } from '../delivery/hand-off.ts';

/** PostgreSQL channel that tells every dispatcher process that deliveries were committed. */
export const WAKE_CHANNEL = 'signet_webhooks';

export interface NewEvent {
  type: OutboxEventType;
  data: unknown;
  occurredAt: Date;
  /** Events about one client's own endpoints: only that client sees and receives them. */
  owner?: string;
  /**
   * Order events: the customer, so a user token can read the events of its own orders; events about an endpoint
   * of one of a client's customers: that customer. An endpoint that belongs to a customer receives only events
   * of that customer (docs/guides/portal.md, "Customer portals").
   */
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
  /** The dispatcher in this process, if any: it takes what this process commits without a claim (hand-off.ts). */
  readonly #handOffTarget: () => HandOffTarget | undefined;

  constructor(
    dialect: Dialect,
    wakeInProcess: () => void,
    handOffTarget: () => HandOffTarget | undefined = () => undefined,
  ) {
    this.#dialect = dialect;
    this.#wakeInProcess = wakeInProcess;
    this.#handOffTarget = handOffTarget;
  }

  /** Must run inside the transaction of the change that caused the event. */
  async record(trx: Executor, event: NewEvent): Promise<RecordedEvent> {
    const eventId = newId('evt');
    const at = toDbTime(event.occurredAt);
    const eventRow: EventRow = {
      id: eventId,
      type: event.type,
      occurred_at: at,
      data: JSON.stringify(event.data),
      owner: event.owner ?? null,
      customer_id: event.customerId ?? null,
      order_id: event.orderId ?? null,
    };
    const endpoints = await subscribedEndpoints(trx, event);
    const deliveries = endpoints.map((endpoint): Omit<DeliveryRow, keyof LeaseColumns> => ({
      id: newId('dlv'),
      event_id: eventId,
      endpoint_id: endpoint.id,
      state: 'pending' as const,
      attempt_count: 0,
      retry_index: 0,
      next_attempt_at: at,
      created_at: at,
      updated_at: at,
    }));
    if (deliveries.length === 0) await insertEvent(trx, eventRow);
    else if (this.#dialect === 'postgres') {
      // One round trip instead of three: the event, its deliveries and the wake-up, in one statement.
      await trx
        .with('event', (db) => db.insertInto('webhook_events').values(eventRow))
        .with('deliveries', (db) => db.insertInto('webhook_deliveries').values(deliveries))
        .selectNoFrom(sql`pg_notify(${WAKE_CHANNEL}, '')`.as('notified'))
        .execute();
    } else {
      await insertEvent(trx, eventRow);
      const ids = deliveries.map((d) => d.id);
      const lease = await handOff(trx, this.#handOffTarget(), eventRow, endpoints, ids);
      // One compiled row INSERT per delivery: a multi-row INSERT's SQL differs with the row count, so
      // Kysely would build and compile it on every event (not measured apart from the whole create).
      for (const delivery of deliveries) await insertDelivery(trx, { ...delivery, ...(lease ?? NO_LEASE) });
      if (!lease) await this.announce(trx);
    }
    return { eventId, deliveryIds: deliveries.map((d) => d.id) };
  }

  /**
   * Tells dispatchers that deliveries are due (new ones, or re-queued). PostgreSQL delivers a NOTIFY
   * only when the transaction commits, to every listening dispatcher. SQLite: the in-process
   * dispatcher is woken once the transaction is durable, since its claim reads through a connection
   * that sees only committed rows (src/db/sqlite/sqlite-group-commit.ts); outside a transaction, at once.
   */
  async announce(trx: Executor): Promise<void> {
    if (this.#dialect === 'postgres') await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(trx);
    else if (!(await afterCommit(trx, this.#wakeInProcess))) this.#wakeInProcess();
  }
}

type EventRow = Omit<Insertable<WebhookEventsTable>, 'seq' | 'tx_id'> & { id: string; occurred_at: string };
type DeliveryRow = Required<Omit<Insertable<WebhookDeliveriesTable>, 'last_status_code' | 'last_error'>>;

const NO_LEASE: Pick<DeliveryRow, keyof LeaseColumns> = { lease_owner: null, lease_until: null };

const EVENT_COLUMNS = ['id', 'type', 'occurred_at', 'data', 'owner', 'customer_id', 'order_id'] as const;

const insertEvent = compiledStatement<EventRow, unknown>((db, param) =>
  db.insertInto('webhook_events').values(placeholderRow(param, EVENT_COLUMNS)),
);

const DELIVERY_COLUMNS = [
  'id',
  'event_id',
  'endpoint_id',
  'state',
  'attempt_count',
  'retry_index',
  'next_attempt_at',
  'lease_owner',
  'lease_until',
  'created_at',
  'updated_at',
] as const;

const insertDelivery = compiledStatement<DeliveryRow, unknown>((db, param) =>
  db.insertInto('webhook_deliveries').values(placeholderRow(param, DELIVERY_COLUMNS)),
);

/** With what sending needs, for a hand-off to the dispatcher in this process. */
async function subscribedEndpoints(trx: Executor, event: NewEvent): Promise<FreshEndpoint[]> {
  const customerId = event.customerId ?? null;
  if (event.owner === undefined && event.endpointIds === undefined) {
    const { rows } = await subscribersOf(trx, { quotedType: quotedType(event.type), customerId });
    return rows;
  }
  let query = trx.selectFrom('webhook_endpoints').select(FRESH_ENDPOINT_COLUMNS).where('enabled', '=', 1);
  if (event.owner !== undefined) query = query.where('owner', '=', event.owner);
  // Addressed to given endpoints (a ping): they get it whatever types they subscribe to, as the caller asked.
  if (event.endpointIds !== undefined) query = query.where('id', 'in', event.endpointIds);
  else
    query = query
      .where(subscribesTo(executorDialect(trx), event.type, 'webhook_endpoints'))
      .where(forCustomer(sql.ref('webhook_endpoints.customer_id'), sql.val(customerId)));
  return query.execute();
}

/**
 * An endpoint of one of a client's customers receives only events of that customer; the client's own endpoints
 * (no customer) receive every event they subscribe to. `customer` null (an event of no customer) reaches only
 * the latter.
 */
function forCustomer(column: RawBuilder<unknown>, customer: unknown): RawBuilder<boolean> {
  return sql<boolean>`(${column} is null or ${column} = ${customer})`;
}

const FRESH_ENDPOINT_COLUMNS = ['id', 'url', 'secret', 'previous_secret', 'previous_secret_expires_at'] as const;

/** Every event's usual case (no owner, no addressees): compiled once. */
const subscribersOf = compiledStatement<{ quotedType: string; customerId: string | null }, FreshEndpoint>((db, param) =>
  db
    .selectFrom('webhook_endpoints')
    .select(FRESH_ENDPOINT_COLUMNS)
    .where('enabled', '=', 1)
    .where(subscribesToQuoted(executorDialect(db), param('quotedType'), 'webhook_endpoints'))
    .where(forCustomer(sql.ref('webhook_endpoints.customer_id'), param('customerId'))),
);

// event_types is a JSON array of type names, which contain no quotes: the quoted name as a substring is exact.
function quotedType(type: string): string {
  return JSON.stringify(type);
}

/** Whether an endpoint of `table` subscribes to `type` (or to every type). */
function subscribesTo(dialect: Dialect, type: string, table: string): RawBuilder<boolean> {
  return subscribesToQuoted(dialect, quotedType(type), table);
}

/**
 * A substring test, not `LIKE ?`: SQLite marks a statement whose LIKE pattern is a bound parameter for
 * re-preparing whenever that parameter is bound (the LIKE optimisation plans on its value; whereexpr.c,
 * isLikeOrGlob), so every event parsed and planned the statement again, 18 µs of a create
 * (docs/benchmarks-history.md, "A statement prepared again on every create"). instr/strpos plan once.
 */
function subscribesToQuoted(dialect: Dialect, quoted: string, table: string): RawBuilder<boolean> {
  const types = sql.ref(`${table}.event_types`);
  const contains = dialect === 'postgres' ? sql`strpos(${types}, ${quoted}) > 0` : sql`instr(${types}, ${quoted}) > 0`;
  return sql<boolean>`(${types} = ${JSON.stringify([ALL_EVENTS])} or ${contains})`;
}

/** The values of EVENT_STATEMENT for one event. */
interface EventStatementValues {
  event_id: string;
  event_type: string;
  event_at: string;
  event_data: string;
  event_customer_id: string | null;
  event_order_id: number | null;
  event_quoted_type: string;
  delivery_id_time: string;
  delivery_id_seed: string;
}

/** The CTEs of one statement that record an event, and what to evaluate after them: shape and values. */
interface EventStatementParts {
  shape: typeof EVENT_STATEMENT;
  values: EventStatementValues;
}

/** See eventStatementParts. One object, so that a statement built with it is compiled once. */
const EVENT_STATEMENT = {
  ctes(param: ParamOf<EventStatementValues>, source: string): RawBuilder<unknown> {
    const at = param('event_at');
    return sql`outbox_event as (
    insert into webhook_events (id, type, occurred_at, data, customer_id, order_id)
    select ${param('event_id')}::text, ${param('event_type')}::text, ${at}::timestamptz,
      ${param('event_data')}::text, ${param('event_customer_id')}::text, ${param('event_order_id')}::integer
    from ${sql.table(source)}
    returning id
  ), outbox_deliveries as (
    insert into webhook_deliveries
      (id, event_id, endpoint_id, state, attempt_count, retry_index, next_attempt_at, created_at, updated_at)
    select 'dlv_' || ${param('delivery_id_time')}::text
        || left(encode(sha256(convert_to(${param('delivery_id_seed')}::text || w.id, 'UTF8')), 'hex'), 20),
      e.id, w.id,
      'pending', 0, 0, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
    from outbox_event e cross join webhook_endpoints w
    where w.enabled = 1 and ${subscribesToQuoted('postgres', param('event_quoted_type'), 'w')}
      and ${forCustomer(sql.ref('w.customer_id'), sql`${param('event_customer_id')}::text`)}
    returning 1
  )`;
  },
  after: (): RawBuilder<unknown> => sql`(select pg_notify(${WAKE_CHANNEL}, '') from outbox_deliveries limit 1)`,
};

/**
 * PostgreSQL: record() as part of a caller's single statement (src/idempotency/idempotency-statement.ts, WriteUnit):
 * the event row and one delivery per subscribed endpoint, written only for the row of the CTE the
 * caller names `source` in EVENT_STATEMENT.ctes (so nothing when the caller's own write did not happen),
 * and the NOTIFY when deliveries were written. The shape is that one constant; this returns its values.
 * Data-modifying CTEs commit together or not at all, like record()'s transaction; PG delivers the NOTIFY
 * at commit (docs: NOTIFY). Subscriptions are matched as in subscribedEndpoints (subscribesToQuoted).
 * Delivery ids are newId's layout: its time part, then 80 bits of SHA-256(128 fresh random bits, endpoint
 * id), as ordered, unguessable and unique as newId's, without a round trip to learn how many endpoints
 * there are.
 */
export function eventStatementParts(event: NewEvent): EventStatementParts {
  if (event.owner !== undefined || event.endpointIds !== undefined)
    throw new Error('eventStatementParts records events for every subscriber only');
  const values: EventStatementValues = {
    event_id: newId('evt'),
    event_type: event.type,
    event_at: toDbTime(event.occurredAt),
    event_data: JSON.stringify(event.data),
    event_customer_id: event.customerId ?? null,
    event_order_id: event.orderId ?? null,
    event_quoted_type: quotedType(event.type),
    delivery_id_time: idTimePart(),
    delivery_id_seed: randomHex(16),
  };
  return { shape: EVENT_STATEMENT, values };
}
