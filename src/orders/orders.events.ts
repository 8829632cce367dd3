// The events an order change emits. The orders module says what happened; whoever implements the
// sink (the webhook outbox) records it in the same transaction as the change.
import type { RawBuilder } from 'kysely';
import type { AnyParam } from '../db/compiled-statement.ts';
import type { Executor } from '../db/executor.ts';
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

/**
 * Part of one statement: its shape, built from named parameters once (the same object for every
 * change of a kind, so the statement is compiled once: compiled-statement.ts), and one change's values.
 */
interface StatementParts {
  shape: StatementPartShape;
  values: object;
}

export interface StatementPartShape {
  /** CTEs written only for the row of the CTE named `source`. */
  ctes(param: AnyParam, source: string): RawBuilder<unknown>;
  /** Evaluated once after the CTEs (a NOTIFY, say). */
  after?(param: AnyParam): RawBuilder<unknown>;
}

/** A sink that can also write an event as part of one statement (the webhook outbox, on PostgreSQL: orders.statement.ts). */
export interface OrderEventStatements {
  /** The event of `order`'s change, for a statement that writes it only for the row of the CTE it names. */
  orderChangedInStatement(type: OrderEventType, order: OrderRecord, now: Date): StatementParts;
}

/** The event a move into `status` emits. */
export function statusEvent(status: Exclude<OrderStatus, 'pending'>): OrderEventType {
  return `order.${status}`;
}
