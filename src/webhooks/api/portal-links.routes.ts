// POST /api/webhooks/portal-links (docs/guides/portal.md, "Portal links"): HTTP only, one service call. Like the
// rest of the webhook API it needs `webhooks:manage` and a client-credentials token: the link is scoped to
// the calling client, and to one of its customers when the body names it. A portal's own token never issues one
// (its holder could hand themself a new portal, forever, or one wider than theirs).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/executor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { Problem } from '../../http/problems/problems.ts';
import { ownerOf } from './endpoints.routes.ts';
import { issuePortalLink } from './portal-links.service.ts';
import * as schemas from './portal-links.schemas.ts';

export async function portalLinkRoutes(fastify: FastifyInstance, options: { db: Db }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // Before the body is validated: an end-user token learns 403, not what its body got wrong.
  app.addHook('preValidation', async (request) => {
    ownerOf(request);
    if (request.principal!.portal)
      throw new Problem('forbidden', 'a portal session cannot issue portal links: the client does, for itself');
  });

  app.post(
    '/api/webhooks/portal-links',
    {
      config: { scope: 'webhooks:manage' },
      schema: {
        tags: ['webhooks'],
        summary:
          'Issue a one-time link to the integrator portal for the calling client or one of its customers (15 minutes, single use)',
        body: schemas.PortalLinkBody,
        response: schemas.PortalLinkResponses,
      },
    },
    async (request, reply) => {
      const clientId = ownerOf(request);
      const link = await issuePortalLink(
        options.db,
        { clientId, customerId: request.body?.CustomerId, baseUrl: publicBaseUrl(request), now: new Date() },
        { requestId: request.id, sourceAddress: request.clientOrigin.ip },
      );
      // The URL is a bearer credential until used: no cache may keep it (RFC 9111 §5.2.2.5).
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .send({
          Id: link.id,
          Url: link.url,
          ExpiresAt: link.expiresAt.toISOString(),
          CustomerId: link.customerId ?? null,
        });
    },
  );
}
