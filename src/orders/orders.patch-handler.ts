// PATCH /api/orders/{id}: picks the patch format from Content-Type, applies it to the order's
// current writable representation and validates the result like a PUT body; the route hands it to the service.
// JSON Patch is atomic (all operations or none) and honours `test` (RFC 6902 §4.6).
import type { FastifyRequest } from 'fastify';
import { fieldErrors } from '../http/problems/errors.ts';
import { Problem } from '../http/problems/problems.ts';
import { ORDER_PROBLEMS } from './orders.errors.ts';
import { compileBodyValidator, validationProblem } from '../http/problems/validation.ts';
import {
  applyJsonPatch,
  applyMergePatch,
  patchMediaType,
  patchSetsMember,
  PATCH_MEDIA_TYPES,
  type PatchResult,
} from './orders.patch-documents.ts';
import type { OrderRecord } from './orders.repository.ts';
import { ReplaceOrderBody } from './orders.schemas.ts';
import { orderMembers } from './orders.representation.ts';
import type { NextState, Replacement } from './orders.service.ts';

const validatePatched = compileBodyValidator<Replacement>(ReplaceOrderBody);
const ACCEPT_PATCH = PATCH_MEDIA_TYPES.join(', ');

function patched(result: PatchResult): Record<string, unknown> {
  if (result.ok) return result.document;
  const errors = result.pointer === undefined ? undefined : [{ pointer: result.pointer, detail: result.detail }];
  if (result.kind === 'invalid-patch') throw new Problem(ORDER_PROBLEMS.invalidPatch, result.detail, { errors });
  // A failed `test` or an unresolvable path: the patch does not fit the current state (RFC 5789 §2.2).
  throw new Problem(ORDER_PROBLEMS.patchConflict, result.detail, { errors });
}

/** The request's patch as the new state of the order it is applied to; 415 for another media type. */
export function patchedState(request: FastifyRequest): NextState {
  const mediaType = patchMediaType(request.headers['content-type']);
  if (!mediaType) {
    throw new Problem('unsupportedMediaType', `PATCH takes ${ACCEPT_PATCH}`, {
      headers: { 'accept-patch': ACCEPT_PATCH },
    });
  }
  // A patch that sets Status asks for a transition, even to the state the order is in; one that does not leaves Status
  // out of the new state, so the service can tell the two apart (docs/guides/calling-the-api.md, "PATCH of Status").
  const requestsTransition = patchSetsMember(mediaType, request.body, 'Status');
  // The patch is applied to the very state the service compares and writes over (and again to the
  // new state if a concurrent write wins), so `test` operations and unchanged members always refer
  // to what is actually replaced.
  return (order: OrderRecord): Replacement => {
    const view = orderMembers(order);
    const document = patched(
      mediaType === 'application/merge-patch+json'
        ? applyMergePatch(view, request.body)
        : applyJsonPatch(view, request.body),
    );
    if (!validatePatched(document)) {
      const errors = fieldErrors(validatePatched.errors ?? []);
      throw validationProblem(errors, `the patched order is not valid: ${errors.map((e) => e.pointer).join(', ')}`);
    }
    if (!requestsTransition) delete document.Status;
    return document;
  };
}
