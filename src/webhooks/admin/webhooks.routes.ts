// /api/admin/webhook-endpoints and /api/admin/webhook-stats (docs/guides/admin-api.md, Webhook endpoints):
// HTTP only, one call of the webhook feature's admin service (src/webhooks/admin/admin.service.ts) per
// handler; the caller is the audit actor. Reading needs admin:read, disabling and enabling admin:write.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../../db/executor.ts';
import { decodeCursor, requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import { isStorableTime } from '../../db/codecs.ts';
import { hasControlCharacter } from '../../http/problems/validation.ts';
import { createWebhookAdminService } from './admin.service.ts';
import { endpointView } from '../api/webhooks.representation.ts';
import type { EndpointRecord } from '../store/endpoints.repository.ts';
import { auditContext } from '../../http/admin/context.ts';
import { boundedWindow } from '../../http/admin/query-params.ts';
import * as schemas from './webhooks.schemas.ts';

const TAGS = ['admin'];

function adminEndpointUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/admin/webhook-endpoints/${id}`;
}

/** The owner's representation, with the owner named and the admin's links in place of the owner's. */
export function adminEndpointView(endpoint: EndpointRecord, baseUrl: string, now: Date) {
  const self = adminEndpointUrl(baseUrl, endpoint.id);
  const toggle = endpoint.enabled ? 'disable' : 'enable';
  return {
    ...endpointView(endpoint, baseUrl, now),
    ClientId: endpoint.owner,
    _links: {
      self: { href: self, method: 'GET' },
      [toggle]: { href: `${self}/${toggle}`, method: 'POST' },
      stats: {
        href: `${baseUrl}/api/admin/webhook-stats?client_id=${encodeURIComponent(endpoint.owner)}`,
        method: 'GET',
      },
    },
  };
}

/**
 * The cursor is not signed: its time (whole milliseconds both databases store) and its id (no U+0000, which
 * PostgreSQL refuses in text) are checked before they reach SQL.
 */
function afterOf(cursor: string | undefined): { createdAt: Date; id: string } | undefined {
  if (cursor === undefined) return undefined;
  const decoded = decodeCursor(cursor, { t: 'number', i: 'string' });
  const t = decoded?.t as number;
  if (!decoded || !Number.isInteger(t) || !isStorableTime(t) || hasControlCharacter(decoded.i as string))
    throw new Problem('invalidParameter', 'cursor is not one this list gave out', {
      errors: [{ pointer: '/cursor', detail: 'use the next link of the previous page' }],
    });
  return { createdAt: new Date(t), id: decoded.i as string };
}

export async function webhookAdminRoutes(fastify: FastifyInstance, options: { db: Db }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const endpoints = createWebhookAdminService({ db: options.db });

  app.get(
    '/api/admin/webhook-endpoints',
    {
      config: { scope: 'admin:read' },
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'Every client’s webhook endpoints, oldest first; `client_id` narrows to one client',
        querystring: schemas.EndpointListQuery,
        response: schemas.EndpointListResponses,
      },
    },
    async (request, reply) => {
      const { client_id: clientId, limit, cursor } = request.query;
      const page = await endpoints.list({ clientId, limit, after: afterOf(cursor) });
      const baseUrl = publicBaseUrl(request);
      const now = new Date();
      const last = page.endpoints.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.endpoints.map((e) => adminEndpointView(e, baseUrl, now)),
        page.more && last ? { parameter: 'cursor', cursor: { t: last.createdAt.getTime(), i: last.id } } : undefined,
      );
    },
  );

  app.get(
    '/api/admin/webhook-endpoints/:id',
    {
      config: { scope: 'admin:read' },
      schema: {
        tags: TAGS,
        summary: 'Read any client’s webhook endpoint',
        params: schemas.EndpointIdParams,
        response: schemas.EndpointResponses,
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return adminEndpointView(await endpoints.get(request.params.id), publicBaseUrl(request), new Date());
    },
  );

  for (const action of ['disable', 'enable'] as const)
    app.post(
      `/api/admin/webhook-endpoints/:id/${action}`,
      {
        config: { scope: 'admin:write' },
        schema: {
          tags: TAGS,
          summary:
            action === 'disable'
              ? 'Disable an endpoint (DisabledReason `admin`): nothing more is sent, waiting deliveries fail'
              : 'Enable an endpoint, whoever disabled it',
          params: schemas.EndpointIdParams,
          response: schemas.EndpointResponses,
        },
      },
      async (request: FastifyRequest<{ Params: { id: string } }>, reply) => {
        const now = new Date();
        const by = auditContext(request);
        const endpoint =
          action === 'disable'
            ? await endpoints.disable(request.params.id, by, now)
            : await endpoints.enable(request.params.id, by, now);
        reply.header('cache-control', 'no-store');
        return adminEndpointView(endpoint, publicBaseUrl(request), now);
      },
    );

  app.get(
    '/api/admin/webhook-stats',
    {
      config: { scope: 'admin:read' },
      schema: {
        tags: TAGS,
        summary: 'One client’s webhook attempts and deliveries by outcome over a time window',
        querystring: schemas.StatsQuery,
        response: schemas.StatsResponses,
      },
    },
    async (request, reply) => {
      const clientId = request.query.client_id;
      const { since, until } = boundedWindow(request.query, new Date());
      const stats = await endpoints.stats(clientId, since, until);
      reply.header('cache-control', 'no-store');
      return {
        ClientId: clientId,
        SinceUtc: since.toISOString(),
        UntilUtc: until.toISOString(),
        Attempts: { Succeeded: stats.attempts.succeeded, Failed: stats.attempts.failed },
        Deliveries: {
          Pending: stats.deliveries.pending,
          Succeeded: stats.deliveries.succeeded,
          Dead: stats.deliveries.dead,
        },
      };
    },
  );
}
