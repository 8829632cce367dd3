// Order routes: HTTP only. Input is validated by the schemas; each handler makes one service call.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Db } from '../db/executor.ts';
import { decodeCursor, requireDecimalLimit } from '../http/representation/cursor.ts';
import { runIdempotent, sendStored, type IdempotencySettings } from '../idempotency/idempotency.ts';
import { publicBaseUrl, signedLinkBaseUrl } from '../http/admission/origin.ts';
import { listPage } from '../http/representation/pages.ts';
import { Problem } from '../http/problems/problems.ts';
import type { Principal } from '../http/bearer/token-verifier.ts';
import { isUuid } from '../http/problems/validation.ts';
import {
  DEFAULT_VARIANT,
  minimalResponse,
  orderResponse,
  preconditionsOf,
  sendOrderRead,
  wantsMinimal,
} from './orders.responses.ts';
import type { OrderEventSinkAt } from './orders.events.ts';
import { patchedState } from './orders.patch-handler.ts';
import { parseVariant, toRepresentation } from './orders.representation.ts';
import {
  ActionHeaders,
  ActionResponses,
  CreateHeaders,
  CreateOrderBody,
  CreateResponses,
  DeleteHeaders,
  DeleteResponses,
  ListQuery,
  ListResponses,
  OrderIdParams,
  OrderQuery,
  PatchBody,
  PatchResponses,
  ReadHeaders,
  ReadResponses,
  ReplaceHeaders,
  ReplaceOrderBody,
  ReplaceResponses,
} from './orders.schemas.ts';
import { createOrdersService, type WriteContext, type WriteOptions } from './orders.service.ts';
import { isOrderStatus, ORDER_ACTIONS, type OrderStatus } from './orders.states.ts';
import { patchValidatorCompiler } from './orders.validation.ts';

interface OrdersRouteOptions {
  db: Db;
  idempotency: IdempotencySettings;
  /** Where order changes are announced, inside their transaction (the webhook outbox). */
  events: OrderEventSinkAt;
}

const TAGS = ['orders'];
const read = { scope: 'orders:read' };
const write = { scope: 'orders:write' };

function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Problem('unauthorized', 'an access token is required');
  return request.principal;
}

/** A write's events link to the public URL the request was made under (never a Host the caller chose). */
function writeContext(request: FastifyRequest): WriteContext {
  return { baseUrl: signedLinkBaseUrl(request) };
}

function writeOptions(request: FastifyRequest): WriteOptions {
  return { check: preconditionsOf(request), ...writeContext(request) };
}

export async function ordersRoutes(fastify: FastifyInstance, options: OrdersRouteOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, idempotency, events } = options;
  const orders = createOrdersService({ db, events });

  app.post(
    '/api/orders',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Create an order',
        headers: CreateHeaders,
        body: CreateOrderBody,
        response: CreateResponses,
      },
    },
    async (request, reply) =>
      runIdempotent(
        request,
        reply,
        db,
        idempotency,
        async (trx) =>
          orderResponse(
            request,
            await orders.create(trx, principalOf(request), request.body, writeContext(request)),
            201,
          ),
        { oneStatement: true },
      ),
  );

  app.get(
    '/api/orders/:id',
    {
      config: read,
      schema: {
        tags: TAGS,
        summary: 'Read an order',
        headers: ReadHeaders,
        params: OrderIdParams,
        querystring: OrderQuery,
        response: ReadResponses,
      },
    },
    async (request, reply) => {
      const variant = parseVariant(request.query.fields, request.query.include);
      const order = await orders.get(principalOf(request), Number(request.params.id));
      return sendOrderRead(request, reply, order, variant, () => orders.history(order));
    },
  );

  app.get(
    '/api/orders',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'List orders, newest first',
        querystring: ListQuery,
        response: ListResponses,
      },
    },
    async (request, reply) => {
      const { limit, fields, include } = request.query;
      const variant = parseVariant(fields, include);
      const filter = listFilter(request.query);
      const page = await orders.list(principalOf(request), { limit, ...filter });
      const baseUrl = publicBaseUrl(request);
      const items = await Promise.all(
        page.orders.map(async (o) =>
          toRepresentation(
            o,
            baseUrl,
            variant,
            variant.include.includes('history') ? await orders.history(o) : undefined,
          ),
        ),
      );
      const last = page.orders.at(-1);
      // The cursor stands for the filters, so they leave the next link.
      const next =
        page.hasMore && last
          ? {
              parameter: 'cursor',
              cursor: { b: last.id, s: filter.status ?? '', c: filter.customerId ?? '' },
              drop: ['Status', 'CustomerId'],
            }
          : undefined;
      return reply
        .header('cache-control', 'private, no-cache')
        .header('vary', 'Authorization, Origin')
        .send(listPage(request, reply, baseUrl, items, next));
    },
  );

  app.put(
    '/api/orders/:id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Replace an order from its full representation',
        headers: ReplaceHeaders,
        params: OrderIdParams,
        body: ReplaceOrderBody,
        response: ReplaceResponses,
      },
    },
    async (request, reply) => {
      const next = request.body;
      const order = await db.transaction().execute((trx) =>
        orders.replace(trx, principalOf(request), Number(request.params.id), next, {
          statusIsReadOnly: true,
          ...writeOptions(request),
        }),
      );
      return sendStored(
        reply,
        wantsMinimal(request) ? minimalResponse(request, order) : orderResponse(request, order, 200),
      );
    },
  );

  app.patch(
    '/api/orders/:id',
    {
      config: write,
      validatorCompiler: patchValidatorCompiler,
      schema: {
        tags: TAGS,
        summary: 'Change an order with JSON Merge Patch (RFC 7396) or JSON Patch (RFC 6902)',
        headers: ReplaceHeaders,
        params: OrderIdParams,
        body: PatchBody,
        response: PatchResponses,
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const next = patchedState(request);
      const order = await db.transaction().execute((trx) =>
        orders.replace(trx, principal, Number(request.params.id), next, {
          statusIsReadOnly: false,
          ...writeOptions(request),
        }),
      );
      return sendStored(
        reply,
        wantsMinimal(request) ? minimalResponse(request, order) : orderResponse(request, order, 200),
      );
    },
  );

  app.delete(
    '/api/orders/:id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Delete a pending or cancelled order',
        headers: DeleteHeaders,
        params: OrderIdParams,
        response: DeleteResponses,
      },
    },
    async (request, reply) => {
      await db
        .transaction()
        .execute((trx) => orders.remove(trx, principalOf(request), Number(request.params.id), writeOptions(request)));
      return reply.code(204).send(null);
    },
  );

  for (const action of ORDER_ACTIONS) {
    app.post(
      `/api/orders/:id/${action}`,
      {
        config: write,
        schema: {
          tags: TAGS,
          summary: `Transition: ${action}`,
          headers: ActionHeaders,
          params: OrderIdParams,
          response: ActionResponses,
        },
      },
      async (request, reply) =>
        runIdempotent(request, reply, db, idempotency, async (trx) => {
          const order = await orders.transition(
            trx,
            principalOf(request),
            Number(request.params.id),
            action,
            writeOptions(request),
          );
          return orderResponse(request, order, 200, DEFAULT_VARIANT);
        }),
    );
  }
}

interface ListFilter {
  beforeId?: number;
  status?: OrderStatus;
  customerId?: string;
}

/** The cursor carries the filters it was made for, so a page can never mix two different queries. */
function listFilter(query: { cursor?: string; Status?: OrderStatus; CustomerId?: string }): ListFilter {
  if (query.cursor === undefined) return { status: query.Status, customerId: query.CustomerId?.toLowerCase() };
  const filter = fromCursor(query.cursor);
  const conflicting =
    (query.Status !== undefined && query.Status !== filter?.status) ||
    (query.CustomerId !== undefined && query.CustomerId.toLowerCase() !== filter?.customerId);
  if (!filter || conflicting) {
    throw new Problem(
      'invalidParameter',
      'cursor is not one this service issued for these filters; start again without it',
      { errors: [{ pointer: '/cursor', detail: 'invalid cursor' }] },
    );
  }
  return filter;
}

/**
 * A cursor is not tamper-proof (src/http/representation/cursor.ts), so its values are held to the rules of the
 * parameters they stand for: a forged CustomerId would reach SQL (a 500 on PostgreSQL's uuid column),
 * a forged Status would quietly match nothing. Null when it is not one this service could have issued.
 */
function fromCursor(cursor: string): ListFilter | null {
  const decoded = decodeCursor(cursor, { b: 'number', s: 'string', c: 'string' });
  if (!decoded) return null;
  const { b, s, c } = decoded as { b: number; s: string; c: string }; // types checked by the shape
  if (!Number.isSafeInteger(b) || b < 1 || (s !== '' && !isOrderStatus(s)) || (c !== '' && !isUuid(c))) return null;
  return {
    beforeId: b,
    status: s === '' ? undefined : (s as OrderStatus),
    customerId: c === '' ? undefined : c.toLowerCase(),
  };
}
