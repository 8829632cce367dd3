// The event list API, for reconciliation (docs/guides/producing-webhooks.md, "The event list"): every retained event in
// commit order, read with an opaque cursor that can be stored and resumed at any later time.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Db, Dialect } from '../../db/executor.ts';
import { decodeCursor, encodeCursor, requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import { ALL_EVENTS, isEventType } from '../outbox/events.catalogue.ts';
import { findEvent, listEvents, START, type EventPosition, type EventReader } from '../store/events.repository.ts';
import { ownerOf } from './endpoints.routes.ts';
import { eventView } from './webhooks.representation.ts';
import { EventIdParams, EventListQuery, EventListResponses, EventResponses } from './webhooks.schemas.ts';

const TAGS = ['events'];
const read = { scope: 'events:read' };

function readerOf(request: FastifyRequest): EventReader {
  const principal = request.principal!;
  // An end user reads the events of their own orders only: endpoint events belong to the client's endpoints.
  if (!principal.isClient) return { owner: undefined, customerId: principal.subject.toLowerCase() };
  // A customer-scoped portal's token (docs/guides/portal.md, "Customer portals"): that customer's events only.
  return { owner: ownerOf(request), customerId: principal.portal?.customerId };
}

function parsePosition(after: string | undefined): EventPosition {
  if (after === undefined) return START;
  const decoded = decodeCursor(after, { t: 'string', s: 'number' });
  if (!decoded || !/^\d{1,20}$/.test(decoded.t as string) || !Number.isSafeInteger(decoded.s)) {
    throw new Problem('invalidParameter', 'after is not a cursor this service issued; start again without it', {
      errors: [{ pointer: '/after', detail: 'invalid cursor' }],
    });
  }
  return { tx: decoded.t as string, seq: decoded.s as number };
}

function parseTypes(type: string | undefined): string[] | undefined {
  if (type === undefined) return undefined;
  const types = [
    ...new Set(
      type
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  ];
  const unknown = types.filter((t) => t !== ALL_EVENTS && !isEventType(t)); // `*` is every type, as for endpoints
  if (types.length === 0 || unknown.length > 0) {
    throw new Problem(
      'invalidParameter',
      `type: unknown event type(s) ${unknown.map((t) => JSON.stringify(t)).join(', ') || '(none given)'}`,
      { errors: [{ pointer: '/type', detail: 'comma-separated event types' }] },
    );
  }
  return types.includes(ALL_EVENTS) ? undefined : types;
}

export async function eventRoutes(fastify: FastifyInstance, options: { db: Db; dialect: Dialect }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, dialect } = options;

  app.get(
    '/api/events',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'Events in commit order, for reconciliation',
        querystring: EventListQuery,
        response: EventListResponses,
      },
    },
    async (request, reply) => {
      const after = parsePosition(request.query.after);
      const types = parseTypes(request.query.type);
      const { limit } = request.query;
      const rows = await listEvents(db, dialect, readerOf(request), { after, types, limit: limit + 1 });
      const items = rows.slice(0, limit);
      const last = items.at(-1)?.position ?? after;
      const nextCursor = encodeCursor({ t: last.tx, s: last.seq });
      const baseUrl = publicBaseUrl(request);
      const next = rows.length > limit ? { parameter: 'after', cursor: nextCursor } : undefined;
      const page = listPage(
        request,
        reply,
        baseUrl,
        items.map((e) => eventView(e, baseUrl)),
        next,
      );
      // NextCursor is there on every page, even the last: a reader stores it and resumes from it later.
      return reply
        .header('cache-control', 'private, no-cache')
        .send({ Items: page.Items, NextCursor: nextCursor, _links: page._links });
    },
  );

  app.get(
    '/api/events/:id',
    {
      config: read,
      schema: { tags: TAGS, summary: 'One event', params: EventIdParams, response: EventResponses },
    },
    async (request) => {
      const event = await findEvent(db, dialect, readerOf(request), request.params.id);
      if (!event)
        throw new Problem(
          'notFound',
          `event ${request.params.id} does not exist (or is older than the retention period)`,
        );
      return eventView(event, publicBaseUrl(request));
    },
  );
}
