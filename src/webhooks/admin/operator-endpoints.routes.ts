// The endpoints an admin registers for operator events (docs/security.md, "Streaming the audit trail"): POST
// /api/admin/webhook-endpoints, and PATCH, DELETE, rotate-secret and ping of such an endpoint. They are webhook
// endpoints of the owner OPERATOR_OWNER under the clients' rules (URL policy, secrets, overlap), receiving
// `audit.entry` events; reading, disabling, the delivery log and recover are the admin routes every endpoint has.
// A client's endpoint is changed by its client: here it is refused (403), though an admin may disable it.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../../db/executor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { Problem } from '../../http/problems/problems.ts';
import { auditContext } from '../../http/admin/context.ts';
import { createEndpointsService, type EndpointContext, type EndpointOwner } from '../api/endpoints.service.ts';
import { findEndpoint } from '../store/endpoints.repository.ts';
import { OPERATOR_OWNER } from '../outbox/events.catalogue.ts';
import { createAdminDeliveriesService } from './admin-deliveries.service.ts';
import { adminDeliveryView } from './deliveries.routes.ts';
import { adminEndpointView } from './webhooks.routes.ts';
import * as schemas from './operator-endpoints.schemas.ts';

const TAGS = ['admin'];
const write = { scope: 'admin:write' };
const OPERATOR: EndpointOwner = { clientId: OPERATOR_OWNER };

export async function operatorEndpointRoutes(
  fastify: FastifyInstance,
  options: { db: Db; context: EndpointContext },
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, context } = options;
  const endpoints = createEndpointsService({ db, context });
  const deliveries = createAdminDeliveriesService({ db, outbox: context.outbox });

  /** 404 when absent; 403 for a client's endpoint, which this route does not change. */
  async function operatorEndpoint(request: FastifyRequest<{ Params: { id: string } }>): Promise<string> {
    const { id } = request.params;
    const endpoint = await findEndpoint(db, id);
    if (!endpoint) throw new Problem('notFound', `webhook endpoint ${id} does not exist`);
    if (endpoint.owner !== OPERATOR_OWNER)
      throw new Problem(
        'forbidden',
        `webhook endpoint ${id} belongs to client ${endpoint.owner}, which changes it; an admin may disable or enable it`,
      );
    return id;
  }

  app.post(
    '/api/admin/webhook-endpoints',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Register an endpoint for operator events (`audit.entry`); the secret is returned only now',
        body: schemas.CreateOperatorEndpointBody,
        response: schemas.CreateOperatorEndpointResponses,
      },
    },
    async (request, reply) => {
      const now = new Date();
      const { endpoint, secret } = await endpoints.create(OPERATOR, request.body, now, auditContext(request));
      const view = adminEndpointView(endpoint, publicBaseUrl(request), now);
      return reply
        .code(201)
        .header('location', view._links.self.href)
        .header('cache-control', 'no-store')
        .send({ ...view, Secret: secret });
    },
  );

  app.patch(
    '/api/admin/webhook-endpoints/:id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Change an operator endpoint’s URL, event types or description; enable or disable it',
        params: schemas.EndpointIdParams,
        body: schemas.PatchOperatorEndpointBody,
        response: schemas.OperatorEndpointResponses,
      },
    },
    async (request, reply) => {
      const now = new Date();
      const id = await operatorEndpoint(request);
      const endpoint = await endpoints.change(OPERATOR, id, request.body, now, auditContext(request));
      reply.header('cache-control', 'no-store');
      return adminEndpointView(endpoint, publicBaseUrl(request), now);
    },
  );

  app.delete(
    '/api/admin/webhook-endpoints/:id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Delete an operator endpoint and its delivery log',
        params: schemas.EndpointIdParams,
        response: schemas.DeleteOperatorEndpointResponses,
      },
    },
    async (request, reply) => {
      await endpoints.remove(OPERATOR, await operatorEndpoint(request), auditContext(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/admin/webhook-endpoints/:id/rotate-secret',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Replace an operator endpoint’s signing secret; the previous one keeps signing during the overlap',
        params: schemas.EndpointIdParams,
        body: schemas.RotateSecretBody,
        response: schemas.RotateSecretResponses,
      },
    },
    async (request, reply) => {
      const id = await operatorEndpoint(request);
      const { secret, previousExpiresAt } = await endpoints.rotateSecret(
        OPERATOR,
        id,
        request.body?.Secret,
        new Date(),
        auditContext(request),
      );
      return reply
        .header('cache-control', 'no-store')
        .send({ Secret: secret, PreviousSecretExpiresAtUtc: previousExpiresAt.toISOString() });
    },
  );

  app.post(
    '/api/admin/webhook-endpoints/:id/ping',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Send a webhook.ping event to this operator endpoint only',
        params: schemas.EndpointIdParams,
        response: schemas.PingResponses,
      },
    },
    async (request, reply) => {
      const recorded = await endpoints.ping(OPERATOR, await operatorEndpoint(request), new Date());
      const delivery = await deliveries.get(recorded.deliveryIds[0]!);
      const view = adminDeliveryView(delivery, publicBaseUrl(request));
      return reply.code(202).header('location', view._links.self!.href).send(view);
    },
  );
}
