// /api/admin/…/grants and …/sessions (docs/guides/admin-api.md, Grants and sessions): HTTP only, one call
// of the grants service (src/auth-server/tokens/grants.service.ts) per handler; the caller is the audit actor.
// Reading needs admin:read, revoking admin:write.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createGrantsService, type GrantView, type SessionView } from '../tokens/grants.service.ts';
import type { Db } from '../../db/executor.ts';
import { decodeCursor, requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import { auditContext } from '../../http/admin/context.ts';
import * as schemas from './grants.schemas.ts';

const TAGS = ['admin'];
const read = { scope: 'admin:read' };
const write = { scope: 'admin:write' };

/** Where the previous page ended: the last id it showed. */
function afterOf(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const decoded = decodeCursor(cursor, { i: 'string' });
  if (!decoded)
    throw new Problem('invalidParameter', 'cursor is not one this list gave out', {
      errors: [{ pointer: '/cursor', detail: 'use the next link of the previous page' }],
    });
  return String(decoded.i);
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function grantView(grant: GrantView, baseUrl: string) {
  return {
    Id: grant.id,
    ClientId: grant.clientId,
    Account: grant.accountId,
    Scopes: grant.scopes,
    CreatedAtUtc: iso(grant.createdAt),
    ExpiresAtUtc: iso(grant.expiresAt),
    _links: {
      revoke: { href: `${baseUrl}/api/admin/grants/${encodeURIComponent(grant.id)}`, method: 'DELETE' },
      user: { href: `${baseUrl}/api/admin/users/${encodeURIComponent(grant.accountId)}`, method: 'GET' },
    },
  };
}

function sessionView(session: SessionView, baseUrl: string) {
  return {
    Id: session.id,
    Account: session.accountId,
    ClientIds: session.clientIds,
    SignedInAtUtc: iso(session.createdAt),
    ExpiresAtUtc: iso(session.expiresAt),
    _links: {
      end: { href: `${baseUrl}/api/admin/sessions/${encodeURIComponent(session.id)}`, method: 'DELETE' },
      user: { href: `${baseUrl}/api/admin/users/${encodeURIComponent(session.accountId)}`, method: 'GET' },
    },
  };
}

export async function grantRoutes(fastify: FastifyInstance, options: { db: Db }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const grants = createGrantsService({ db: options.db });

  function grantPage(request: FastifyRequest, reply: FastifyReply, page: { grants: GrantView[]; more: boolean }) {
    const baseUrl = publicBaseUrl(request);
    const last = page.grants.at(-1);
    reply.header('cache-control', 'no-store');
    return listPage(
      request,
      reply,
      baseUrl,
      page.grants.map((g) => grantView(g, baseUrl)),
      page.more && last ? { parameter: 'cursor', cursor: { i: last.id } } : undefined,
    );
  }

  app.get(
    '/api/admin/users/:id/grants',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'The grants a user consented to, one per client',
        params: schemas.UserIdParams,
        querystring: schemas.PageQuery,
        response: schemas.GrantListResponses,
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await grants.listForUser(request.params.id, { limit, after: afterOf(cursor) });
      return grantPage(request, reply, page);
    },
  );

  app.get(
    '/api/admin/clients/:client_id/grants',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'The grants users gave a client',
        params: schemas.ClientIdParams,
        querystring: schemas.PageQuery,
        response: schemas.GrantListResponses,
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await grants.listForClient(request.params.client_id, { limit, after: afterOf(cursor) });
      return grantPage(request, reply, page);
    },
  );

  app.get(
    '/api/admin/users/:id/sessions',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'The user’s signed-in sessions at the authorization server',
        params: schemas.UserIdParams,
        querystring: schemas.PageQuery,
        response: schemas.SessionListResponses,
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await grants.sessionsOf(request.params.id, { limit, after: afterOf(cursor) });
      const baseUrl = publicBaseUrl(request);
      const last = page.sessions.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.sessions.map((s) => sessionView(s, baseUrl)),
        page.more && last ? { parameter: 'cursor', cursor: { i: last.id } } : undefined,
      );
    },
  );

  app.delete(
    '/api/admin/grants/:grant_id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary:
          'Revoke a grant: its refresh tokens fail at once; access tokens already issued stay valid at the API until they expire',
        params: schemas.GrantIdParams,
        response: schemas.RevokeResponses,
      },
    },
    async (request, reply) => {
      await grants.revoke(request.params.grant_id, auditContext(request));
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/admin/sessions/:session_id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary:
          'End a session as a logout does: the user signs in again; grants and their refresh tokens stay (revoke the grant to end them)',
        params: schemas.SessionIdParams,
        response: schemas.RevokeResponses,
      },
    },
    async (request, reply) => {
      await grants.endSession(request.params.session_id, auditContext(request));
      return reply.code(204).send(null);
    },
  );
}
