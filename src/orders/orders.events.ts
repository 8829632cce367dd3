// The events an order change emits. The orders module says what happened; whoever implements the
// sink (the webhook outbox) records it in the same transaction as the change.
import type { RawBuilder } from 'kysely';
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

/**
 * The sink for the changes made under one public base URL (PUBLIC_URL, else the request's trusted
 * origin): the links in an event's Data start there, as the links in the response to that change do.
 */
export type OrderEventSinkAt = (baseUrl: string) => OrderEventSink;

/** CTEs of one statement, and what to evaluate after them. */
export interface StatementParts {
  ctes: RawBuilder<unknown>;
  after?: RawBuilder<unknown>;
}

/** A sink that can also write an event as part of one statement (the webhook outbox, on PostgreSQL: orders.statement.ts). */
export interface OrderEventStatements {
  /** The event of `order`'s change, written only for the row of the CTE named `source`. */
  orderChangedInStatement(type: OrderEventType, order: OrderRecord, now: Date, source: string): StatementParts;
}

/** The event a move into `status` emits. */
export function statusEvent(status: Exclude<OrderStatus, 'pending'>): OrderEventType {
  return `order.${status}`;
}
