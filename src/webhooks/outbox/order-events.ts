// Order changes become outbox events whose Data is the order as the API shows it.
import type {
  OrderEventSink,
  OrderEventSinkAt,
  OrderEventStatements,
  OrderEventType,
} from '../../orders/orders.events.ts';
import { toRepresentation } from '../../orders/orders.representation.ts';
import { eventStatementParts, type NewEvent, type Outbox } from './events.outbox.ts';

type Order = Parameters<OrderEventSink['orderChanged']>[2];

/**
 * Data links start at the base URL of the change (the request's public URL), fixed when the event is
 * written. The sink also offers the form the orders service looks for on PostgreSQL (orders.statement.ts).
 */
export function orderEventSink(outbox: Outbox): OrderEventSinkAt {
  return (baseUrl): OrderEventSink & OrderEventStatements => ({
    async orderChanged(trx, type, order, now) {
      await outbox.record(trx, orderEvent(baseUrl, type, order, now));
    },
    // Used only where the orders service was handed a WriteUnit, which exists on PostgreSQL only.
    orderChangedInStatement(type, order, now) {
      return eventStatementParts(orderEvent(baseUrl, type, order, now));
    },
  });
}

function orderEvent(baseUrl: string, type: OrderEventType, order: Order, now: Date): NewEvent {
  const data = toRepresentation(order, baseUrl, { fields: undefined, include: [] });
  if (type === 'order.deleted') delete data._links; // nothing left to link to
  return { type, data, occurredAt: now, customerId: order.customerId, orderId: order.id };
}
