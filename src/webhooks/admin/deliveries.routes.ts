// /api/admin/webhook-deliveries and an endpoint's recover (docs/guides/admin-api.md, Delivery log): every
// client's delivery log for operators. HTTP only, one call of the webhook feature's admin service
// (src/webhooks/admin/admin-deliveries.service.ts) per handler; the caller is the audit actor.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/executor.ts';
import { requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { createAdminDeliveriesService } from './admin-deliveries.service.ts';
import type { AdminDeliveryRecord } from '../store/admin-log.repository.ts';
import type { Outbox } from '../outbox/events.outbox.ts';
import { attemptView, deliveryView } from '../api/webhooks.representation.ts';
import { auditContext } from '../../http/admin/context.ts';
import { cursorAfter, positionOf, windowOf } from '../../http/admin/query-params.ts';
import * as schemas from './deliveries.schemas.ts';

const TAGS = ['admin'];
const DELIVERY_ID = /^dlv_[0-9a-f]{32}$/;

/** The owner's representation with its owner named and the admin's links in place of the owner's. */
export function adminDeliveryView(d: AdminDeliveryRecord, baseUrl: string) {
  const self = `${baseUrl}/api/admin/webhook-deliveries/${d.id}`;
  const links: Record<string, { href: string; method: string }> = {
    self: { href: self, method: 'GET' },
    endpoint: { href: `${baseUrl}/api/admin/webhook-endpoints/${d.endpointId}`, method: 'GET' },
    event: { href: `${baseUrl}/api/admin/events/${d.eventId}`, method: 'GET' },
  };
  if (d.state !== 'pending') links.redeliver = { href: `${self}/redeliver`, method: 'POST' };
  return { ...deliveryView(d, baseUrl), ClientId: d.owner, _links: links };
}

export async function deliveryAdminRoutes(fastify: FastifyInstance, options: { db: Db; outbox: Outbox }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const service = createAdminDeliveriesService(options);

  app.get(
    '/api/admin/webhook-deliveries',
    {
      config: { scope: 'admin:read' },
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'Every client’s webhook deliveries, newest first, in cursor pages',
        querystring: schemas.DeliveryListQuery,
        response: schemas.DeliveryListResponses,
      },
    },
    async (request, reply) => {
      const q = request.query;
      const before = positionOf<string>(q.cursor, 'string', (id) => DELIVERY_ID.test(id));
      const page = await service.list({
        endpointId: q.endpoint_id,
        clientId: q.client_id,
        eventId: q.event_id,
        state: q.state,
        eventType: q.event_type,
        ...windowOf(q),
        before,
        limit: q.limit,
      });
      const baseUrl = publicBaseUrl(request);
      const last = page.items.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.items.map((d) => adminDeliveryView(d, baseUrl)),
        page.hasMore && last ? { parameter: 'cursor', cursor: cursorAfter(last.createdAt, last.id) } : undefined,
      );
    },
  );

  app.get(
    '/api/admin/webhook-deliveries/:id',
    {
      config: { scope: 'admin:read' },
      schema: {
        tags: TAGS,
        summary: 'One delivery of any client, with every attempt',
        params: schemas.DeliveryIdParams,
        response: schemas.DeliveryResponses,
      },
    },
    async (request, reply) => {
      const delivery = await service.get(request.params.id);
      const attempts = await service.attempts(delivery.id);
      reply.header('cache-control', 'no-store');
      return { ...adminDeliveryView(delivery, publicBaseUrl(request)), Attempts: attempts.map(attemptView) };
    },
  );

  app.post(
    '/api/admin/webhook-deliveries/:id/redeliver',
    {
      config: { scope: 'admin:write' },
      schema: {
        tags: TAGS,
        summary: 'Send any client’s delivery again (same delivery id); audited as webhook_delivery.redelivered',
        params: schemas.DeliveryIdParams,
        response: schemas.RedeliverResponses,
      },
    },
    async (request, reply) => {
      const delivery = await service.redeliver(request.params.id, auditContext(request), new Date());
      return reply
        .code(202)
        .header('cache-control', 'no-store')
        .send(adminDeliveryView(delivery, publicBaseUrl(request)));
    },
  );

  app.post(
    '/api/admin/webhook-endpoints/:id/recover',
    {
      config: { scope: 'admin:write' },
      schema: {
        tags: TAGS,
        summary: 'Queue again every failed delivery of any client’s endpoint created since a time; audited',
        params: schemas.EndpointIdParams,
        body: schemas.RecoverBody,
        response: schemas.RecoverResponses,
      },
    },
    async (request, reply) => {
      const since = new Date(request.body.Since);
      const requeued = await service.recover(request.params.id, since, auditContext(request), new Date());
      return reply.code(202).send({ Requeued: requeued });
    },
  );
}
