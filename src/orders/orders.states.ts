// The order state machine (documented in docs/guides/calling-the-api.md and the OpenAPI description).
//
//   pending ──pay──▶ paid ──ship──▶ shipped ──deliver──▶ delivered
//      │
//      └──cancel──▶ cancelled
//
// Money moves at `pay`, so from then on an order can neither be cancelled here (a refund flow would be
// its own resource) nor deleted: only `pending` and `cancelled` orders may be deleted, and only a
// `pending` order's CustomerId/Total/Currency may change.
export const ORDER_STATUSES = ['pending', 'paid', 'cancelled', 'shipped', 'delivered'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export function isOrderStatus(value: string): value is OrderStatus {
  return (ORDER_STATUSES as readonly string[]).includes(value);
}

export const ORDER_ACTIONS = ['pay', 'cancel', 'ship', 'deliver'] as const;
export type OrderAction = (typeof ORDER_ACTIONS)[number];

interface Transition {
  from: OrderStatus;
  to: OrderStatus;
}

export const TRANSITIONS: Record<OrderAction, Transition> = {
  pay: { from: 'pending', to: 'paid' },
  cancel: { from: 'pending', to: 'cancelled' },
  ship: { from: 'paid', to: 'shipped' },
  deliver: { from: 'shipped', to: 'delivered' },
};

export function actionBetween(from: OrderStatus, to: OrderStatus): OrderAction | undefined {
  return ORDER_ACTIONS.find((a) => TRANSITIONS[a].from === from && TRANSITIONS[a].to === to);
}

export function actionsFrom(status: OrderStatus): OrderAction[] {
  return ORDER_ACTIONS.filter((a) => TRANSITIONS[a].from === status);
}

export function isEditable(status: OrderStatus): boolean {
  return status === 'pending';
}

export function isDeletable(status: OrderStatus): boolean {
  return status === 'pending' || status === 'cancelled';
}

/** Orders that have shipped can be tracked. */
export function isTrackable(status: OrderStatus): boolean {
  return status === 'shipped' || status === 'delivered';
}
