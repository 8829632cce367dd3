// PostgreSQL: a new order in one autocommit statement with everything that commits with it: its first
// status change, its order.created event and deliveries, and the response stored on its Idempotency-Key
// (WriteUnit, src/idempotency/idempotency-statement.ts), which also claims the key. Before it, the order's id,
// whose round trip the creates running at the same time share (src/db/postgres/sequence-reservations.ts).
import { sql } from 'kysely';
import type { ParamOf } from '../db/compiled-statement.ts';
import type { StatementWriteShape, WriteUnit } from '../idempotency/idempotency-statement.ts';
import type { OrderEventSink, OrderEventStatements, StatementPartShape } from './orders.events.ts';
import {
  insertOrderCtes,
  NEXT_ORDER_ID,
  newOrderValues,
  type NewOrderValues,
  type OrderRecord,
} from './orders.repository.ts';

export function writesInStatement(sink: OrderEventSink): sink is OrderEventSink & OrderEventStatements {
  return typeof (sink as Partial<OrderEventStatements>).orderChangedInStatement === 'function';
}

interface ValidOrder {
  customerId: string;
  totalMinor: number;
  currency: string;
}

/**
 * The order as insertOrder would return it, built here from an id taken first: the response and the
 * event's Data carry the id, and both are part of the one statement. Every column is known: the values
 * sent (CustomerId already in the lower case PostgreSQL's uuid prints, times in whole milliseconds).
 */
export async function createInOneStatement(
  unit: WriteUnit,
  valid: ValidOrder,
  now: Date,
  events: OrderEventStatements,
): Promise<OrderRecord> {
  const id = Number(await unit.reserve(NEXT_ORDER_ID));
  const order: OrderRecord = { id, ...valid, status: 'pending', version: 1, createdAt: now, updatedAt: now };
  const event = events.orderChangedInStatement('order.created', order, now);
  unit.defer({ shape: createShapeOf(event.shape), values: { ...newOrderValues(order), ...event.values } });
  return order;
}

/** The create's shape for each event shape (one in practice): the same object each time, compiled once. */
const createShapes = new WeakMap<StatementPartShape, StatementWriteShape>();

function createShapeOf(event: StatementPartShape): StatementWriteShape {
  let shape = createShapes.get(event);
  if (shape === undefined) {
    const after = event.after?.bind(event);
    shape = {
      ctes: (gate: string, param: ParamOf<NewOrderValues>) =>
        sql`${insertOrderCtes(param, gate)}, ${event.ctes(param, 'new_order')}`,
      ...(after && { after }),
    };
    createShapes.set(event, shape);
  }
  return shape;
}
