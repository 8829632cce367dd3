// HTTP helpers for order routes: building responses with their validators, and turning the
// request's conditional headers into the service's precondition check (RFC 9110 §13).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { evaluatePreconditions, formatHttpDate } from '../http/representation/conditional.ts';
import { sendStored, type StoredResponse } from '../idempotency/idempotency.ts';
import { publicBaseUrl } from '../http/admission/origin.ts';
import { Problem } from '../http/problems/problems.ts';
import type { OrderRecord, StatusChangeRecord } from './orders.repository.ts';
import { entityTag, orderUrl, tagMatchesVersion, toRepresentation, type Variant } from './orders.representation.ts';
import type { PreconditionCheck } from './orders.service.ts';

export const DEFAULT_VARIANT: Variant = { fields: undefined, include: [] };

// Per-caller data: caches may keep it only privately and must revalidate before each reuse (RFC 9111 §5.2.2).
const CACHE_CONTROL = 'private, no-cache';
const VARY = 'Authorization, Origin';

type ValidatorHeaders = Record<'etag' | 'cache-control' | 'vary', string>;

function validatorHeaders(order: OrderRecord, baseUrl: string, variant: Variant): ValidatorHeaders {
  return { etag: entityTag(order, baseUrl, variant), 'cache-control': CACHE_CONTROL, vary: VARY };
}

function representationResponse(
  order: OrderRecord,
  status: number,
  baseUrl: string,
  validators: ValidatorHeaders,
  variant: Variant,
  history?: StatusChangeRecord[],
): StoredResponse {
  const headers: Record<string, string> = {
    ...validators,
    'content-type': 'application/json; charset=utf-8',
    'last-modified': formatHttpDate(order.updatedAt),
  };
  if (status === 201) headers.location = orderUrl(baseUrl, order.id);
  return { status, headers, body: JSON.stringify(toRepresentation(order, baseUrl, variant, history)) };
}

export function orderResponse(
  request: FastifyRequest,
  order: OrderRecord,
  status: number,
  variant = DEFAULT_VARIANT,
  history?: StatusChangeRecord[],
): StoredResponse {
  const baseUrl = publicBaseUrl(request);
  return representationResponse(order, status, baseUrl, validatorHeaders(order, baseUrl, variant), variant, history);
}

/**
 * GET/HEAD of one order: 304 when the client's copy is current (with the headers RFC 9110 §15.4.5
 * requires), 412 on a failed If-Match, else the representation. Validators are computed once.
 */
export async function sendOrderRead(
  request: FastifyRequest,
  reply: FastifyReply,
  order: OrderRecord,
  variant: Variant,
  loadHistory: () => Promise<StatusChangeRecord[]>,
): Promise<FastifyReply> {
  const baseUrl = publicBaseUrl(request);
  const validators = validatorHeaders(order, baseUrl, variant);
  const outcome = evaluatePreconditions(request.method, request.headers, {
    etag: validators.etag,
    lastModified: order.updatedAt,
  });
  if (outcome === 'not-modified') return reply.code(304).headers(validators).send();
  if (outcome === 'precondition-failed')
    throw new Problem('preconditionFailed', 'the order does not match If-Match / If-Unmodified-Since');
  const history = variant.include.includes('history') ? await loadHistory() : undefined;
  return sendStored(reply, representationResponse(order, 200, baseUrl, validators, variant, history));
}

/** RFC 7240 `Prefer: return=minimal` → 204 with the validators only. */
export function wantsMinimal(request: FastifyRequest): boolean {
  const prefer = request.headers.prefer;
  return typeof prefer === 'string' && /(^|[,;\s])return=minimal\b/i.test(prefer);
}

export function minimalResponse(request: FastifyRequest, order: OrderRecord): StoredResponse {
  const headers = validatorHeaders(order, publicBaseUrl(request), DEFAULT_VARIANT);
  return {
    status: 204,
    headers: { ...headers, 'preference-applied': 'return=minimal', 'last-modified': formatHttpDate(order.updatedAt) },
    body: '',
  };
}

/** For writes: If-Match / If-Unmodified-Since / If-None-Match against the current order. */
export function preconditionsOf(request: FastifyRequest): PreconditionCheck {
  return (order) => {
    const validators = {
      etag: entityTag(order, publicBaseUrl(request), DEFAULT_VARIANT),
      lastModified: order.updatedAt,
      matchesCurrent: (tag: string) => tagMatchesVersion(tag, order),
    };
    if (evaluatePreconditions(request.method, request.headers, validators) !== 'proceed') {
      throw new Problem(
        'preconditionFailed',
        `order ${order.id} has changed since the representation you sent preconditions for; fetch it again (current ETag ${validators.etag})`,
        {
          headers: { etag: validators.etag },
        },
      );
    }
    return request.headers['if-match'] !== undefined || request.headers['if-unmodified-since'] !== undefined;
  };
}
