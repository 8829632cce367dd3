// Order rules: who may see and change which order, money validation, the state machine, and
// compare-and-set writes. Knows nothing of HTTP; the caller passes the executor (transaction) and
// a precondition check built from the request's conditional headers.
import type { Db, Executor } from '../db/executor.ts';
import { Problem, type FieldError } from '../http/problems/problems.ts';
import { isUuid, validationProblem } from '../http/problems/validation.ts';
import { writeUnitOf } from '../idempotency/idempotency-statement.ts';
import { ORDER_PROBLEMS } from './orders.errors.ts';
import type { Principal } from '../http/bearer/token-verifier.ts';
import { statusEvent, type OrderEventSink, type OrderEventSinkAt } from './orders.events.ts';
import { isActiveCurrency, toMinorUnits } from './orders.money.ts';
import * as repo from './orders.repository.ts';
import { createInOneStatement, writesInStatement } from './orders.statement.ts';
import type { OrderChanges, OrderRecord, StatusChangeRecord } from './orders.repository.ts';
import {
  actionBetween,
  isDeletable,
  isEditable,
  TRANSITIONS,
  type OrderAction,
  type OrderStatus,
} from './orders.states.ts';

/** Throws 412 when the request's preconditions fail; returns true when the write must also match the version. */
export type PreconditionCheck = (order: OrderRecord) => boolean;

interface OrderFields {
  CustomerId: string;
  Total: number;
  Currency?: string;
}

function canSee(principal: Principal, order: OrderRecord): boolean {
  return principal.isClient || order.customerId === principal.subject.toLowerCase();
}

/** Another customer's order answers 404, not 403: its existence is not revealed. */
async function getVisibleOrder(db: Executor, principal: Principal, id: number): Promise<OrderRecord> {
  const order = await repo.findOrder(db, id);
  if (!order || !canSee(principal, order)) throw new Problem('notFound', `order ${id} does not exist`);
  return order;
}

async function getHistory(db: Executor, order: OrderRecord): Promise<StatusChangeRecord[]> {
  return repo.listStatusChanges(db, order.id);
}

/** Validates the mutable fields; collects every violation so the client can fix them at once. */
function validateFields(
  principal: Principal,
  fields: OrderFields,
): { customerId: string; totalMinor: number; currency: string } {
  const errors: FieldError[] = [];
  const customerId = fields.CustomerId.toLowerCase();
  const currency = fields.Currency ?? 'USD';
  let totalMinor = 0;
  if (!isActiveCurrency(currency)) {
    errors.push({ pointer: '/Currency', detail: `"${currency}" is not an active ISO 4217 currency code` });
  } else {
    const money = toMinorUnits(fields.Total, currency);
    if (money.ok) totalMinor = money.minor;
    else errors.push({ pointer: '/Total', detail: money.detail });
  }
  if (errors.length > 0) throw validationProblem(errors);
  if (!principal.isClient && customerId !== principal.subject.toLowerCase()) {
    throw new Problem('forbidden', 'an end-user token may only use its own subject as CustomerId');
  }
  return { customerId, totalMinor, currency };
}

async function createOrder(
  db: Executor,
  principal: Principal,
  fields: OrderFields,
  now: Date,
  events: OrderEventSink,
): Promise<OrderRecord> {
  const valid = validateFields(principal, fields);
  // PostgreSQL under runIdempotent: the order, its history, its event and the key's response in one statement.
  const unit = writeUnitOf(db);
  if (unit && writesInStatement(events)) return createInOneStatement(unit, valid, now, events);
  const order = await repo.insertOrder(db, { ...valid, now });
  await repo.insertStatusChange(db, order.id, order.status, now);
  await events.orderChanged(db, 'order.created', order, now);
  return order;
}

function invalidState(order: OrderRecord, attempted: string): Problem {
  return new Problem(ORDER_PROBLEMS.invalidTransition, `order ${order.id} is ${order.status}; cannot ${attempted}`, {
    extensions: { currentStatus: order.status },
  });
}

/** After a compare-and-set matched nothing: say why, from the state as it is now. */
async function explainLostRace(
  db: Executor,
  principal: Principal,
  id: number,
  attempted: string,
  expectedStatus: OrderStatus,
): Promise<never> {
  const now = await getVisibleOrder(db, principal, id);
  if (now.status !== expectedStatus) throw invalidState(now, attempted);
  throw new Problem('preconditionFailed', `order ${id} changed while this request was processed; fetch it and retry`);
}

/**
 * The state machine's rule for a requested move, shared by the action URLs and PATCH: only from a state
 * that allows it, so asking for the state the order is already in is refused too (409 with
 * currentStatus): a caller is told it made the move only when its own write made it.
 */
function requireTransition(order: OrderRecord, to: OrderStatus, attempted: string): void {
  if (!actionBetween(order.status, to)) throw invalidState(order, attempted);
}

/**
 * Writes a move that was already checked against `order` as one compare-and-set on its status (and,
 * when given, its version): of concurrent requests for the same move exactly one finds the order
 * still in `order.status`. Undefined when another write got there first.
 */
async function applyTransition(
  db: Executor,
  order: OrderRecord,
  changes: OrderChanges & { status: OrderStatus },
  guardVersion: boolean,
  now: Date,
  events: OrderEventSink,
): Promise<OrderRecord | undefined> {
  const guard = { status: order.status, version: guardVersion ? order.version : undefined };
  const updated = await repo.updateOrderIf(db, order.id, guard, changes, now);
  if (!updated) return undefined;
  // A PATCH may change fields and move a pending order on at once: both are announced, in that order.
  const fieldsChanged = Object.keys(changes).some((member) => member !== 'status');
  if (fieldsChanged) await events.orderChanged(db, 'order.updated', updated, now);
  await repo.insertStatusChange(db, order.id, changes.status, now);
  await events.orderChanged(db, statusEvent(changes.status as Exclude<OrderStatus, 'pending'>), updated, now);
  return updated;
}

async function transitionOrder(
  db: Executor,
  principal: Principal,
  id: number,
  action: OrderAction,
  check: PreconditionCheck,
  now: Date,
  events: OrderEventSink,
): Promise<OrderRecord> {
  const { from, to } = TRANSITIONS[action];
  const order = await getVisibleOrder(db, principal, id);
  if (order.status !== from) throw invalidState(order, action);
  const guardVersion = check(order);
  const updated = await applyTransition(db, order, { status: to }, guardVersion, now, events);
  return updated ?? explainLostRace(db, principal, id, action, from);
}

interface ReadOnlyMembers {
  Id?: number;
  CreatedAtUtc?: string;
  Status?: OrderStatus;
}

function checkReadOnly(order: OrderRecord, sent: ReadOnlyMembers, statusIsReadOnly: boolean): void {
  const errors: FieldError[] = [];
  if (sent.Id !== undefined && sent.Id !== order.id)
    errors.push({ pointer: '/Id', detail: `read-only; this order's Id is ${order.id}` });
  if (sent.CreatedAtUtc !== undefined && Date.parse(sent.CreatedAtUtc) !== order.createdAt.getTime())
    errors.push({ pointer: '/CreatedAtUtc', detail: 'read-only' });
  if (statusIsReadOnly && sent.Status !== undefined && sent.Status !== order.status) {
    errors.push({ pointer: '/Status', detail: 'read-only in PUT; use the pay/cancel/ship/deliver actions or PATCH' });
  }
  if (errors.length > 0) throw validationProblem(errors);
}

function diff(order: OrderRecord, valid: { customerId: string; totalMinor: number; currency: string }): OrderChanges {
  const changes: OrderChanges = {};
  if (valid.customerId !== order.customerId) changes.customerId = valid.customerId;
  if (valid.totalMinor !== order.totalMinor || valid.currency !== order.currency) {
    changes.totalMinor = valid.totalMinor;
    changes.currency = valid.currency;
  }
  return changes;
}

export interface Replacement extends OrderFields, ReadOnlyMembers {
  /** Always stated: only a new order defaults to USD. */
  Currency: string;
}

/** The new full state, or how to compute it from the current one (a PATCH applies to the state it replaces). */
export type NextState = Replacement | ((current: OrderRecord) => Replacement);

/** Field changes only: the current order when there are none, undefined when a concurrent write won. */
async function updateFields(
  db: Executor,
  order: OrderRecord,
  changes: OrderChanges,
  { now, events }: { now: Date; events: OrderEventSink },
): Promise<OrderRecord | undefined> {
  if (Object.keys(changes).length === 0) return order;
  const updated = await repo.updateOrderIf(
    db,
    order.id,
    { status: order.status, version: order.version },
    changes,
    now,
  );
  if (updated) await events.orderChanged(db, 'order.updated', updated, now);
  return updated;
}

/** Safety net only: every lost compare-and-set means another write committed, so retries are bounded by the writers. */
const MAX_WRITE_ATTEMPTS = 50;

/**
 * PUT and PATCH end here: the new full state is compared with the current one, and only real changes
 * are written (so repeating a PUT changes nothing: idempotent). Field changes need an editable state.
 * In PUT, Status is read-only (sent back unchanged or 422). In PATCH, a Status in the new state is a
 * requested transition (the patch handler leaves it out when the patch does not set it), held to the
 * rule of the action URLs: allowed from the current state only, so the state the order is already in
 * is 409 too, and written as the same compare-and-set on the status (applyTransition).
 *
 * Optimistic read-modify-write: the write is guarded by the version just read. When a concurrent
 * writer got there first, the whole step (computing `next`, state rules, preconditions) is repeated
 * on the new state: a client that sent If-Match then gets 412 because its tag is now stale, an
 * unconditional write is applied to the current state instead of failing with a 412 for a
 * precondition it never sent, a patch is never written back over a change it did not see, and a
 * transition that lost to another one is refused with 409 like a late POST …/pay.
 */
async function replaceOrder(
  db: Executor,
  principal: Principal,
  id: number,
  next: NextState,
  options: { statusIsReadOnly: boolean; check: PreconditionCheck; now: Date; events: OrderEventSink },
): Promise<OrderRecord> {
  for (let attempt = 1; ; attempt++) {
    const order = await getVisibleOrder(db, principal, id);
    const wanted = typeof next === 'function' ? next(order) : next;
    checkReadOnly(order, wanted, options.statusIsReadOnly);
    const changes = diff(order, validateFields(principal, wanted));
    if (Object.keys(changes).length > 0 && !isEditable(order.status))
      throw invalidState(order, 'change CustomerId, Total or Currency');
    const requested = options.statusIsReadOnly ? undefined : wanted.Status;
    if (requested !== undefined) requireTransition(order, requested, `move to ${requested}`);
    // After the state rules, as in transitionOrder and deleteOrder: a change the state forbids is 409 whatever the
    // preconditions say (docs/guides/calling-the-api.md: preconditions are ignored when the answer would be 409).
    options.check(order);
    const updated =
      requested === undefined
        ? await updateFields(db, order, changes, options)
        : await applyTransition(db, order, { ...changes, status: requested }, true, options.now, options.events);
    if (updated) return updated;
    if (attempt >= MAX_WRITE_ATTEMPTS) return explainLostRace(db, principal, id, 'apply the change', order.status);
  }
}

async function deleteOrder(
  db: Executor,
  principal: Principal,
  id: number,
  check: PreconditionCheck,
  now: Date,
  events: OrderEventSink,
): Promise<void> {
  const order = await getVisibleOrder(db, principal, id);
  if (!isDeletable(order.status))
    throw invalidState(order, 'delete it (only pending and cancelled orders can be deleted)');
  const guardVersion = check(order);
  const deleted = await repo.deleteOrderIf(db, id, ['pending', 'cancelled'], guardVersion ? order.version : undefined);
  if (!deleted) return explainLostRace(db, principal, id, 'delete it', order.status);
  await events.orderChanged(db, 'order.deleted', order, now);
}

interface ListRequest {
  limit: number;
  beforeId?: number;
  status?: OrderStatus;
  customerId?: string;
}

/** One page plus whether another follows (one extra row is read to know). */
async function listOrders(
  db: Executor,
  principal: Principal,
  request: ListRequest,
): Promise<{ orders: OrderRecord[]; hasMore: boolean }> {
  // Every CustomerId is a UUID; a subject that is not one (another issuer's user) owns nothing, and
  // PostgreSQL's uuid column would refuse it as a query parameter.
  if (!principal.isClient && !isUuid(principal.subject)) return { orders: [], hasMore: false };
  const customerId = principal.isClient ? request.customerId?.toLowerCase() : principal.subject.toLowerCase();
  const rows = await repo.listOrders(db, {
    customerId,
    status: request.status,
    beforeId: request.beforeId,
    limit: request.limit + 1,
  });
  return { orders: rows.slice(0, request.limit), hasMore: rows.length > request.limit };
}

interface OrdersDependencies {
  /** Reads outside a write; writes run on the executor their caller passes (its transaction). */
  db: Db;
  /**
   * Where order changes are announced, inside their transaction (the webhook outbox), for the public
   * base URL of the write: an event's links start where the response's do (docs/operations/proxies.md).
   */
  events: OrderEventSinkAt;
  /** The time a write is stamped with. */
  clock?: () => Date;
}

/** What every write is told: the public base URL it was made under. */
export interface WriteContext {
  baseUrl: string;
}

export interface WriteOptions extends WriteContext {
  check: PreconditionCheck;
}

/**
 * The order rules bound once to their dependencies. Each write takes the executor it runs on: the
 * caller owns the transaction (an idempotent request stores its response in the same one).
 */
export function createOrdersService({ db, events, clock = () => new Date() }: OrdersDependencies) {
  return {
    get: (principal: Principal, id: number) => getVisibleOrder(db, principal, id),
    history: (order: OrderRecord) => getHistory(db, order),
    list: (principal: Principal, request: ListRequest) => listOrders(db, principal, request),
    create: (trx: Executor, principal: Principal, fields: OrderFields, { baseUrl }: WriteContext) =>
      createOrder(trx, principal, fields, clock(), events(baseUrl)),
    transition: (
      trx: Executor,
      principal: Principal,
      id: number,
      action: OrderAction,
      { check, baseUrl }: WriteOptions,
    ) => transitionOrder(trx, principal, id, action, check, clock(), events(baseUrl)),
    replace: (
      trx: Executor,
      principal: Principal,
      id: number,
      next: NextState,
      options: WriteOptions & { statusIsReadOnly: boolean },
    ) => replaceOrder(trx, principal, id, next, { ...options, now: clock(), events: events(options.baseUrl) }),
    remove: (trx: Executor, principal: Principal, id: number, { check, baseUrl }: WriteOptions) =>
      deleteOrder(trx, principal, id, check, clock(), events(baseUrl)),
  };
}
