// The events an order change emits. The orders module says what happened; whoever implements the
// sink (the webhook outbox) records it in the same transaction as the change.
import type { Executor } from '../db/database.ts';
import type { OrderRecord } from './orders.repository.ts';
import type { OrderStatus } from './orders.states.ts';

export type OrderEventType =
  | 'order.created'
  | 'order.updated'
  | 'order.paid'
  | 'order.cancelled'
  | 'order.shipped'
  | 'order.delivered'
  | 'order.deleted';

export interface OrderEventSink {
  orderChanged(trx: Executor, type: OrderEventType, order: OrderRecord, now: Date): Promise<void>;
}

/** The event a move into `status` emits. */
export function statusEvent(status: Exclude<OrderStatus, 'pending'>): OrderEventType {
  return `order.${status}`;
}
