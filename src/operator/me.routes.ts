// GET /api/me/clients (docs/guides/admin-api.md, Owned clients): the clients the signed-in user owns, so the
// integrator portal shows them only theirs. Any user's token from a sign-in will do (scope `openid`, which
// every sign-in grants and no client-credentials token carries): it needs no admin scope.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createClientsService, type ClientRecord } from '../auth-server/clients/clients.service.ts';
import type { Db } from '../db/executor.ts';
import { requireDecimalLimit } from '../http/representation/cursor.ts';
import { publicBaseUrl } from '../http/admission/origin.ts';
import { listPage } from '../http/representation/pages.ts';
import { Problem } from '../http/problems/problems.ts';
import * as schemas from './me.schemas.ts';
import { clientCursorOf } from '../http/admin/query-params.ts';

/** The user behind the token; a client acting for itself owns nothing. */
function userOf(request: FastifyRequest): string {
  const principal = request.principal;
  if (!principal) throw new Problem('unauthorized', 'an access token is required');
  if (principal.isClient) throw new Problem('forbidden', 'clients are owned by users: send a signed-in user’s token');
  return principal.subject;
}

function ownedView(client: ClientRecord, baseUrl: string) {
  return {
    ClientId: client.clientId,
    Name: client.name,
    _links: { webhooks: { href: `${baseUrl}/api/webhooks`, method: 'GET' } },
  };
}

export async function meRoutes(fastify: FastifyInstance, options: { db: Db }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const clients = createClientsService({ db: options.db, apiScopes: [] });

  app.get(
    '/api/me/clients',
    {
      config: { scope: 'openid' },
      preValidation: requireDecimalLimit,
      schema: {
        tags: ['admin'],
        summary: 'List the clients the signed-in user owns, oldest first',
        querystring: schemas.OwnedClientListQuery,
        response: schemas.OwnedClientListResponses,
      },
    },
    async (request, reply) => {
      const ownerId = userOf(request);
      const { limit, cursor } = request.query;
      const page = await clients.list({ limit, after: clientCursorOf(cursor), ownerId });
      const baseUrl = publicBaseUrl(request);
      const last = page.clients.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.clients.map((client) => ownedView(client, baseUrl)),
        page.more && last ? { parameter: 'cursor', cursor: { c: last.createdAt, i: last.clientId } } : undefined,
      );
    },
  );
}
