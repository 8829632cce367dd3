// Webhook endpoint registration and the delivery log: HTTP only, one service call per handler.
// Every route needs `webhooks:manage`; an endpoint belongs to the client that registered it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Db } from '../../db/executor.ts';
import { decodeCursor, requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import { createDeliveriesService, isStorableTime } from './deliveries.service.ts';
import {
  createEndpointsService,
  type ChangedBy,
  type EndpointContext,
  type EndpointOwner,
} from './endpoints.service.ts';
import { attemptView, deliveryUrl, deliveryView, endpointUrl, endpointView } from './webhooks.representation.ts';
import * as schemas from './webhooks.schemas.ts';

interface EndpointRouteOptions {
  db: Db;
  context: EndpointContext;
}

const TAGS = ['webhooks'];
const manage = { scope: 'webhooks:manage' };
const NO_STORE = 'no-store';

/**
 * The registering client (client credentials). End-user tokens are refused: an endpoint receives every
 * customer's order events, and users of one client must not see or change each other's endpoints.
 */
export function ownerOf(request: FastifyRequest): string {
  const principal = request.principal;
  if (!principal) throw new Problem('unauthorized', 'an access token is required');
  if (!principal.isClient)
    throw new Problem(
      'forbidden',
      'webhook endpoints are managed with a client-credentials token, not an end-user token',
    );
  return principal.clientId ?? principal.subject;
}

/**
 * Whose endpoints the caller sees: the client's, or, for a customer-scoped portal's token (the portal claim,
 * docs/guides/portal.md "Customer portals"), only that customer's.
 */
export function scopeOf(request: FastifyRequest): EndpointOwner {
  const clientId = ownerOf(request);
  const customerId = request.principal!.portal?.customerId;
  return customerId === undefined ? { clientId } : { clientId, customerId };
}

/**
 * The audit actor of a change (docs/security.md, "The audit trail"): the owning client, with the request's id and
 * address, and the portal session (and its link) when the change came through one.
 */
function changedBy(request: FastifyRequest): ChangedBy {
  const portal = request.principal?.portal;
  return {
    actor: { type: 'client', id: ownerOf(request) },
    requestId: request.id,
    sourceAddress: request.clientOrigin.ip,
    ...(portal && { portal }),
  };
}

export async function endpointRoutes(fastify: FastifyInstance, options: EndpointRouteOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, context } = options;
  const endpoints = createEndpointsService({ db, context });
  const deliveries = createDeliveriesService({ db, outbox: context.outbox });
  // Before the body is validated: an end-user token learns 403, not what its body got wrong.
  app.addHook('preValidation', async (request) => void ownerOf(request));

  app.post(
    '/api/webhooks',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Register a webhook endpoint (the secret is returned only now)',
        body: schemas.CreateEndpointBody,
        response: schemas.CreateEndpointResponses,
      },
    },
    async (request, reply) => {
      const now = new Date();
      const { endpoint, secret } = await endpoints.create(scopeOf(request), request.body, now, changedBy(request));
      const baseUrl = publicBaseUrl(request);
      return reply
        .code(201)
        .header('location', endpointUrl(baseUrl, endpoint.id))
        .header('cache-control', NO_STORE)
        .send({ ...endpointView(endpoint, baseUrl, now), Secret: secret });
    },
  );

  app.get(
    '/api/webhooks',
    {
      config: manage,
      schema: { tags: TAGS, summary: "List the caller's webhook endpoints", response: schemas.EndpointListResponses },
    },
    async (request) => {
      const baseUrl = publicBaseUrl(request);
      const now = new Date();
      const owned = await endpoints.list(scopeOf(request));
      return {
        Items: owned.map((e) => endpointView(e, baseUrl, now)),
        _links: { self: { href: `${baseUrl}/api/webhooks`, method: 'GET' } },
      };
    },
  );

  app.get(
    '/api/webhooks/:id',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Read a webhook endpoint',
        params: schemas.EndpointIdParams,
        response: schemas.EndpointResponses,
      },
    },
    async (request) =>
      endpointView(await endpoints.get(scopeOf(request), request.params.id), publicBaseUrl(request), new Date()),
  );

  app.patch(
    '/api/webhooks/:id',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Change the URL, event types or description; enable or disable',
        params: schemas.EndpointIdParams,
        body: schemas.PatchEndpointBody,
        response: schemas.EndpointResponses,
      },
    },
    async (request) => {
      const now = new Date();
      const endpoint = await endpoints.change(
        scopeOf(request),
        request.params.id,
        request.body,
        now,
        changedBy(request),
      );
      return endpointView(endpoint, publicBaseUrl(request), now);
    },
  );

  app.delete(
    '/api/webhooks/:id',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Delete an endpoint and its delivery log',
        params: schemas.EndpointIdParams,
        response: schemas.DeleteEndpointResponses,
      },
    },
    async (request, reply) => {
      await endpoints.remove(scopeOf(request), request.params.id, changedBy(request));
      return reply.code(204).send(null);
    },
  );

  /** 202 with the queued delivery and its Location: where to watch it arrive. */
  async function acceptedDelivery(
    request: FastifyRequest,
    reply: FastifyReply,
    owner: EndpointOwner,
    deliveryId: string,
  ) {
    const { delivery } = await deliveries.get(owner, deliveryId);
    const baseUrl = publicBaseUrl(request);
    return reply.code(202).header('location', deliveryUrl(baseUrl, delivery.id)).send(deliveryView(delivery, baseUrl));
  }

  app.post(
    '/api/webhooks/:id/ping',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Send a webhook.ping event to this endpoint only',
        params: schemas.EndpointIdParams,
        response: schemas.PingResponses,
      },
    },
    async (request, reply) => {
      const owner = scopeOf(request);
      const recorded = await endpoints.ping(owner, request.params.id, new Date());
      return acceptedDelivery(request, reply, owner, recorded.deliveryIds[0]!);
    },
  );

  app.post(
    '/api/webhooks/:id/test-events',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: "Send a test event of any type to this endpoint only, with the type's example Data",
        params: schemas.EndpointIdParams,
        body: schemas.TestEventBody,
        response: schemas.TestEventResponses,
      },
    },
    async (request, reply) => {
      const owner = scopeOf(request);
      const recorded = await endpoints.sendTestEvent(owner, request.params.id, request.body.Type, new Date());
      return acceptedDelivery(request, reply, owner, recorded.deliveryIds[0]!);
    },
  );

  app.post(
    '/api/webhooks/:id/rotate-secret',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Replace the signing secret; the previous one keeps signing during the overlap',
        params: schemas.EndpointIdParams,
        body: schemas.RotateSecretBody,
        response: schemas.RotateSecretResponses,
      },
    },
    async (request, reply) => {
      const chosen = request.body?.Secret;
      const { secret, previousExpiresAt } = await endpoints.rotateSecret(
        scopeOf(request),
        request.params.id,
        chosen,
        new Date(),
        changedBy(request),
      );
      return reply
        .header('cache-control', NO_STORE)
        .send({ Secret: secret, PreviousSecretExpiresAtUtc: previousExpiresAt.toISOString() });
    },
  );

  app.post(
    '/api/webhooks/:id/recover',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Queue again every failed delivery created since a time',
        params: schemas.EndpointIdParams,
        body: schemas.RecoverBody,
        response: schemas.RecoverResponses,
      },
    },
    async (request, reply) =>
      reply.code(202).send({
        Requeued: await deliveries.recover(
          scopeOf(request),
          request.params.id,
          new Date(request.body.Since),
          new Date(),
        ),
      }),
  );

  app.get(
    '/api/webhooks/:id/deliveries',
    {
      config: manage,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'Deliveries to this endpoint, newest first',
        params: schemas.EndpointIdParams,
        querystring: schemas.DeliveryListQuery,
        response: schemas.DeliveryListResponses,
      },
    },
    async (request, reply) => {
      const { State, limit, cursor } = request.query;
      const before = cursor === undefined ? undefined : decodeDeliveryCursor(cursor);
      const page = await deliveries.list(scopeOf(request), {
        endpointId: request.params.id,
        state: State,
        before,
        limit,
      });
      const baseUrl = publicBaseUrl(request);
      const last = page.items.at(-1);
      const next =
        page.hasMore && last ? { parameter: 'cursor', cursor: { t: last.createdAt.getTime(), i: last.id } } : undefined;
      return listPage(
        request,
        reply,
        baseUrl,
        page.items.map((d) => deliveryView(d, baseUrl)),
        next,
      );
    },
  );

  app.get(
    '/api/webhooks/deliveries/:id',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'One delivery with every attempt',
        params: schemas.DeliveryIdParams,
        response: schemas.DeliveryResponses,
      },
    },
    async (request) => {
      const { delivery } = await deliveries.get(scopeOf(request), request.params.id);
      const attempts = await deliveries.attempts(delivery);
      return { ...deliveryView(delivery, publicBaseUrl(request)), Attempts: attempts.map(attemptView) };
    },
  );

  app.post(
    '/api/webhooks/deliveries/:id/redeliver',
    {
      config: manage,
      schema: {
        tags: TAGS,
        summary: 'Send this delivery again (same delivery id)',
        params: schemas.DeliveryIdParams,
        response: schemas.RedeliverResponses,
      },
    },
    async (request, reply) =>
      reply
        .code(202)
        .send(
          deliveryView(
            await deliveries.redeliver(scopeOf(request), request.params.id, new Date()),
            publicBaseUrl(request),
          ),
        ),
  );
}

const DELIVERY_ID = new RegExp(schemas.DELIVERY_ID);

/** The cursor is not signed: its time and id are checked as strictly as any input before they reach SQL. */
function decodeDeliveryCursor(cursor: string): { createdAt: Date; id: string } {
  const decoded = decodeCursor(cursor, { t: 'number', i: 'string' });
  const t = decoded?.t as number;
  if (!decoded || !Number.isInteger(t) || !isStorableTime(t) || !DELIVERY_ID.test(decoded.i as string)) {
    throw new Problem('invalidParameter', 'cursor is not one this service issued; start again without it', {
      errors: [{ pointer: '/cursor', detail: 'invalid cursor' }],
    });
  }
  return { createdAt: new Date(t), id: decoded.i as string };
}
