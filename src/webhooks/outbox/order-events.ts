// Order changes become outbox events whose Data is the order as the API shows it.
import type { OrderEventSink } from '../../orders/orders.events.ts';
import { toRepresentation } from '../../orders/orders.representation.ts';
import type { Outbox } from './events.outbox.ts';

export function orderEventSink(outbox: Outbox, baseUrl: string): OrderEventSink {
  return {
    async orderChanged(trx, type, order, now) {
      const data = toRepresentation(order, baseUrl, { fields: undefined, include: [] });
      if (type === 'order.deleted') delete data._links; // nothing left to link to
      await outbox.record(trx, { type, data, occurredAt: now, customerId: order.customerId, orderId: order.id });
    },
  };
}
