// PostgreSQL: a new order in one autocommit statement with everything that commits with it: its first
// status change, its order.created event and deliveries, and the response stored on its Idempotency-Key
// (WriteUnit, src/http/idempotency-statement.ts), which also claims the key. Before it, the order's id,
// whose round trip the creates running at the same time share (src/db/sequence-reservations.ts).
import { sql } from 'kysely';
import type { WriteUnit } from '../http/idempotency-statement.ts';
import type { OrderEventSink, OrderEventStatements } from './orders.events.ts';
import { insertOrderCtes, NEXT_ORDER_ID, type OrderRecord } from './orders.repository.ts';

export function writesInStatement(sink: OrderEventSink): sink is OrderEventSink & OrderEventStatements {
  return typeof (sink as Partial<OrderEventStatements>).orderChangedInStatement === 'function';
}

export interface ValidOrder {
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
  const event = events.orderChangedInStatement('order.created', order, now, 'new_order');
  unit.defer({ ctes: (gate) => sql`${insertOrderCtes(order, gate)}, ${event.ctes}`, after: event.after });
  return order;
}
