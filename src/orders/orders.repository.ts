// SQL for orders. Plain functions over the database or an open transaction; one row mapper.
// State changes are compare-and-set in a single UPDATE … WHERE status/version = …, so the rule
// "to paid only while pending" holds under any concurrency, on both dialects.
import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/executor.ts';
import { fromDbTime, toDbTime } from '../db/codecs.ts';
import { compiledStatement, type ParamOf } from '../db/compiled-statement.ts';
import type { DbTime, OrdersTable } from '../db/schema.ts';
import type { OrderStatus } from './orders.states.ts';

export interface OrderRecord {
  id: number;
  customerId: string;
  totalMinor: number;
  currency: string;
  status: OrderStatus;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface StatusChangeRecord {
  status: OrderStatus;
  at: Date;
}

const COLUMNS = [
  'id',
  'customer_id',
  'total_minor',
  'currency',
  'status',
  'version',
  'created_at',
  'updated_at',
] as const;

type OrderRow = { [K in (typeof COLUMNS)[number]]: K extends 'id' ? number : OrdersTable[K] };

function toRecord(row: OrderRow): OrderRecord {
  return {
    id: Number(row.id),
    customerId: row.customer_id,
    totalMinor: Number(row.total_minor),
    currency: row.currency,
    status: row.status as OrderStatus,
    version: Number(row.version),
    createdAt: fromDbTime(row.created_at),
    updatedAt: fromDbTime(row.updated_at),
  };
}

interface NewOrder {
  customerId: string;
  totalMinor: number;
  currency: string;
  now: Date;
}

const insertOrderRow = compiledStatement<
  { customerId: string; totalMinor: number; currency: string; at: DbTime },
  OrderRow
>((db, param) =>
  db
    .insertInto('orders')
    .values({
      customer_id: param('customerId'),
      total_minor: param('totalMinor'),
      currency: param('currency'),
      status: 'pending',
      version: 1,
      created_at: param('at'),
      updated_at: param('at'),
    })
    .returning(COLUMNS),
);

export async function insertOrder(db: Executor, order: NewOrder): Promise<OrderRecord> {
  const { rows } = await insertOrderRow(db, { ...order, at: toDbTime(order.now) });
  return toRecord(rows[0]!);
}

/** PostgreSQL: the next order id, taken before the order is written (its response and event carry it). */
export const NEXT_ORDER_ID: RawBuilder<number> = sql<number>`nextval(pg_get_serial_sequence('orders', 'id'))`;

/** The values of insertOrderCtes for one order. */
export interface NewOrderValues {
  order_id: number;
  order_customer_id: string;
  order_total_minor: number;
  order_currency: string;
  order_status: string;
  order_version: number;
  order_created_at: string;
  order_updated_at: string;
}

export function newOrderValues(order: OrderRecord): NewOrderValues {
  return {
    order_id: order.id,
    order_customer_id: order.customerId,
    order_total_minor: order.totalMinor,
    order_currency: order.currency,
    order_status: order.status,
    order_version: order.version,
    order_created_at: toDbTime(order.createdAt),
    order_updated_at: toDbTime(order.updatedAt),
  };
}

/**
 * PostgreSQL: insertOrder and its first status change as CTEs of one statement, for an id from
 * NEXT_ORDER_ID; written only for the row of the CTE named `gate`. CTE `new_order` yields the order's id.
 * Built from named parameters (newOrderValues), so the statement is compiled once (compiled-statement.ts).
 * The parameters are cast because INSERT … SELECT gives them no type from the target columns.
 */
export function insertOrderCtes(param: ParamOf<NewOrderValues>, gate: string): RawBuilder<unknown> {
  return sql`new_order as (
    insert into orders (id, customer_id, total_minor, currency, status, version, created_at, updated_at)
    overriding system value
    select ${param('order_id')}::bigint, ${param('order_customer_id')}::uuid, ${param('order_total_minor')}::bigint,
      ${param('order_currency')}::text, ${param('order_status')}::text, ${param('order_version')}::integer,
      ${param('order_created_at')}::timestamptz, ${param('order_updated_at')}::timestamptz
    from ${sql.table(gate)}
    returning id
  ), new_status_change as (
    insert into order_status_changes (order_id, status, changed_at)
    select id, ${param('order_status')}::text, ${param('order_created_at')}::timestamptz from new_order
  )`;
}

// The primary-key read serves every GET, 304 and write: compiled once (compiled-statement.ts).
const findOrderRow = compiledStatement<{ id: number }, OrderRow>((db, param) =>
  db.selectFrom('orders').select(COLUMNS).where('id', '=', param('id')),
);

export async function findOrder(db: Executor, id: number): Promise<OrderRecord | undefined> {
  const { rows } = await findOrderRow(db, { id });
  const row = rows[0];
  return row && toRecord(row);
}

interface OrderFilter {
  customerId?: string;
  status?: OrderStatus;
  beforeId?: number;
  limit: number;
}

/** Newest first (ids only grow), keyset-paginated by id. */
export async function listOrders(db: Executor, filter: OrderFilter): Promise<OrderRecord[]> {
  let query = db.selectFrom('orders').select(COLUMNS);
  if (filter.customerId !== undefined) query = query.where('customer_id', '=', filter.customerId);
  if (filter.status !== undefined) query = query.where('status', '=', filter.status);
  if (filter.beforeId !== undefined) query = query.where('id', '<', filter.beforeId);
  const rows = await query.orderBy('id', 'desc').limit(filter.limit).execute();
  return rows.map(toRecord);
}

export interface OrderChanges {
  customerId?: string;
  totalMinor?: number;
  currency?: string;
  status?: OrderStatus;
}

interface UpdateGuard {
  /** Only while the order is in this state. */
  status: OrderStatus;
  /** Only while the order still has this version (If-Match, or a read-modify-write). */
  version?: number;
}

/** Applies the changes if the guard still holds; undefined when it does not (or the order is gone). */
export async function updateOrderIf(
  db: Executor,
  id: number,
  guard: UpdateGuard,
  changes: OrderChanges,
  now: Date,
): Promise<OrderRecord | undefined> {
  let query = db
    .updateTable('orders')
    .set((eb) => ({
      customer_id: changes.customerId,
      total_minor: changes.totalMinor,
      currency: changes.currency,
      status: changes.status,
      version: eb('version', '+', 1),
      updated_at: toDbTime(now),
    }))
    .where('id', '=', id)
    .where('status', '=', guard.status);
  if (guard.version !== undefined) query = query.where('version', '=', guard.version);
  const row = await query.returning(COLUMNS).executeTakeFirst();
  return row && toRecord(row);
}

export async function deleteOrderIf(
  db: Executor,
  id: number,
  statuses: OrderStatus[],
  version?: number,
): Promise<boolean> {
  let query = db.deleteFrom('orders').where('id', '=', id).where('status', 'in', statuses);
  if (version !== undefined) query = query.where('version', '=', version);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

const insertStatusChangeRow = compiledStatement<{ orderId: number; status: OrderStatus; at: DbTime }, unknown>(
  (db, param) =>
    db
      .insertInto('order_status_changes')
      .values({ order_id: param('orderId'), status: param('status'), changed_at: param('at') }),
);

export async function insertStatusChange(db: Executor, orderId: number, status: OrderStatus, at: Date): Promise<void> {
  await insertStatusChangeRow(db, { orderId, status, at: toDbTime(at) });
}

export async function listStatusChanges(db: Executor, orderId: number): Promise<StatusChangeRecord[]> {
  const rows = await db
    .selectFrom('order_status_changes')
    .select(['status', 'changed_at'])
    .where('order_id', '=', orderId)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ status: r.status as OrderStatus, at: fromDbTime(r.changed_at) }));
}
