// Order changes become outbox events whose Data is the order as the API shows it.
import type { OrderEventSinkAt } from '../../orders/orders.events.ts';
import { toRepresentation } from '../../orders/orders.representation.ts';
import type { Outbox } from './events.outbox.ts';

/** Data links start at the base URL of the change (the request's public URL), fixed when the event is written. */
export function orderEventSink(outbox: Outbox): OrderEventSinkAt {
  return (baseUrl) => ({
    async orderChanged(trx, type, order, now) {
      const data = toRepresentation(order, baseUrl, { fields: undefined, include: [] });
      if (type === 'order.deleted') delete data._links; // nothing left to link to
      await outbox.record(trx, { type, data, occurredAt: now, customerId: order.customerId, orderId: order.id });
    },
  });
}
