// /api/admin/events (docs/guides/admin-api.md, Events): every client's events for operators, newest first,
// filtered by type, order and time, each with its deliveries counted by state. HTTP only; one call of the
// webhook feature's admin service per handler.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/executor.ts';
import { requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import { ALL_EVENTS, isEventType, isOperatorEventType } from '../outbox/events.catalogue.ts';
import { createAdminDeliveriesService } from './admin-deliveries.service.ts';
import type { Outbox } from '../outbox/events.outbox.ts';
import type { AdminEventRecord, StateCounts } from '../store/admin-log.repository.ts';
import { cursorAfter, positionOf, windowOf } from '../../http/admin/query-params.ts';
import * as schemas from './events.schemas.ts';

const TAGS = ['admin'];

function adminEventView({ event, deliveries }: { event: AdminEventRecord; deliveries: StateCounts }, baseUrl: string) {
  const self = `${baseUrl}/api/admin/events/${event.id}`;
  return {
    Id: event.id,
    Type: event.type,
    OccurredAtUtc: event.occurredAt.toISOString(),
    Data: JSON.parse(event.dataJson) as unknown,
    ClientId: event.owner,
    OrderId: event.orderId,
    Deliveries: { Pending: deliveries.pending, Succeeded: deliveries.succeeded, Failed: deliveries.failed },
    _links: {
      self: { href: self, method: 'GET' },
      deliveries: { href: `${baseUrl}/api/admin/webhook-deliveries?event_id=${event.id}`, method: 'GET' },
    },
  };
}

/** `a,b` → the known types; `*` (or nothing) → every type; an unknown name is a 400 pointing at `type`. */
function typesOf(type: string | undefined): string[] | undefined {
  if (type === undefined) return undefined;
  const types = [...new Set(type.split(',').map((t) => t.trim()))];
  const unknown = types.filter((t) => t !== ALL_EVENTS && !isEventType(t) && !isOperatorEventType(t));
  if (unknown.length > 0 || types.length === 0)
    throw new Problem(
      'invalidParameter',
      `type: unknown event type(s) ${unknown.map((t) => JSON.stringify(t)).join(', ')}`,
      {
        errors: [{ pointer: '/type', detail: 'comma-separated event types from the catalogue, or *' }],
      },
    );
  return types.includes(ALL_EVENTS) ? undefined : types;
}

export async function eventAdminRoutes(fastify: FastifyInstance, options: { db: Db; outbox: Outbox }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const service = createAdminDeliveriesService(options);

  app.get(
    '/api/admin/events',
    {
      config: { scope: 'admin:read' },
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'Every client’s events, newest first, in cursor pages, with their deliveries by state',
        querystring: schemas.EventListQuery,
        response: schemas.EventListResponses,
      },
    },
    async (request, reply) => {
      const q = request.query;
      const before = positionOf<number>(q.cursor, 'number', (seq) => Number.isSafeInteger(seq) && seq > 0);
      const page = await service.events({
        types: typesOf(q.type),
        orderId: q.order_id,
        ...windowOf(q),
        before,
        limit: q.limit,
      });
      const baseUrl = publicBaseUrl(request);
      const last = page.items.at(-1)?.event;
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.items.map((e) => adminEventView(e, baseUrl)),
        page.hasMore && last ? { parameter: 'cursor', cursor: cursorAfter(last.occurredAt, last.seq) } : undefined,
      );
    },
  );

  app.get(
    '/api/admin/events/:id',
    {
      config: { scope: 'admin:read' },
      schema: {
        tags: TAGS,
        summary: 'One event of any client, with its deliveries by state',
        params: schemas.EventIdParams,
        response: schemas.EventResponses,
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return adminEventView(await service.event(request.params.id), publicBaseUrl(request));
    },
  );
}
