// PATCH /api/orders/{id}: picks the patch format from Content-Type, applies it to the order's
// current writable representation, validates the result like a PUT body and hands it to the service.
// JSON Patch is atomic (all operations or none) and honours `test` (RFC 6902 §4.6).
import type { OrderEventSink } from './orders.events.ts';
import type { FastifyRequest } from 'fastify';
import type { Executor } from '../db/database.ts';
import { fieldErrors } from '../http/errors.ts';
import { Problem } from '../http/problems.ts';
import type { Principal } from '../http/token-verifier.ts';
import { compileBodyValidator } from '../http/validation.ts';
import { fromMinorUnits } from './orders.money.ts';
import {
  applyJsonPatch,
  applyMergePatch,
  patchMediaType,
  PATCH_MEDIA_TYPES,
  type PatchResult,
} from './orders.patch-documents.ts';
import type { OrderRecord } from './orders.repository.ts';
import { ReplaceOrderBody } from './orders.schemas.ts';
import * as service from './orders.service.ts';
import { preconditionsOf } from './orders.responses.ts';

const validatePatched = compileBodyValidator<service.Replacement>(ReplaceOrderBody);
export const ACCEPT_PATCH = PATCH_MEDIA_TYPES.join(', ');

function writableView(order: OrderRecord): Record<string, unknown> {
  return {
    Id: order.id,
    CustomerId: order.customerId,
    Total: fromMinorUnits(order.totalMinor, order.currency),
    Currency: order.currency,
    Status: order.status,
    CreatedAtUtc: order.createdAt.toISOString(),
    UpdatedAtUtc: order.updatedAt.toISOString(),
  };
}

function patched(result: PatchResult): Record<string, unknown> {
  if (result.ok) return result.document;
  const errors = result.pointer === undefined ? undefined : [{ pointer: result.pointer, detail: result.detail }];
  if (result.kind === 'invalid-patch') throw new Problem('invalidPatch', result.detail, { errors });
  // A failed `test` or an unresolvable path: the patch does not fit the current state (RFC 5789 §2.2).
  throw new Problem('patchConflict', result.detail, { errors });
}

export async function applyJsonPatchToOrder(
  db: Executor,
  principal: Principal,
  id: number,
  request: FastifyRequest,
  events: OrderEventSink,
): Promise<OrderRecord> {
  const mediaType = patchMediaType(request.headers['content-type']);
  if (!mediaType) {
    throw new Problem('unsupportedMediaType', `PATCH takes ${ACCEPT_PATCH}`, {
      headers: { 'accept-patch': ACCEPT_PATCH },
    });
  }
  // The patch is applied to the very state the service compares and writes over (and again to the
  // new state if a concurrent write wins), so `test` operations and unchanged members always refer
  // to what is actually replaced.
  const patchedOrder = (order: OrderRecord): service.Replacement => {
    const view = writableView(order);
    const document = patched(
      mediaType === 'application/merge-patch+json'
        ? applyMergePatch(view, request.body)
        : applyJsonPatch(view, request.body),
    );
    if (!validatePatched(document)) {
      const errors = fieldErrors(validatePatched.errors ?? []);
      throw new Problem('validation', `the patched order is not valid: ${errors.map((e) => e.pointer).join(', ')}`, {
        errors,
      });
    }
    return document;
  };
  return service.replaceOrder(db, principal, id, patchedOrder, {
    statusIsReadOnly: false,
    check: preconditionsOf(request),
    now: new Date(),
    events,
  });
}
