// /api/admin/portal-links and /api/admin/portal-sessions (docs/guides/admin-api.md, "Portal links and sessions"):
// operators list the portal links clients issued and the portal sessions open now, and end either at once. The
// console owns the sessions (portal-sessions.ts), so it serves these routes; reading needs admin:read, ending
// admin:write; every end is audited with the admin as actor.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import { recordAudit } from '../audit/audit.ts';
import { isStorableTime } from '../db/codecs.ts';
import type { Db } from '../db/executor.ts';
import { auditContext } from '../http/admin/context.ts';
import { publicBaseUrl } from '../http/admission/origin.ts';
import { Problem } from '../http/problems/problems.ts';
import { NO_CONTROL_CHARACTERS_PATTERN } from '../http/problems/validation.ts';
import { decodeCursor, requireDecimalLimit } from '../http/representation/cursor.ts';
import { listPage } from '../http/representation/pages.ts';
import { listLinks, PORTAL_LINK_ID, revokeLink } from '../webhooks/api/portal-links.service.ts';
import type { PortalLinkRecord } from '../webhooks/store/portal-links.repository.ts';
import type { PortalSessionRow } from './portal-sessions.repository.ts';
import { PORTAL_SESSION_ID, type PortalStore } from './portal-sessions.ts';

const TAGS = ['admin'];
const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);
const Customer = Type.Union([Type.String(), Type.Null()], {
  description: 'The customer the portal is limited to; null: the client’s own staff (or its owner).',
});

const ListQuery = Type.Object({
  client_id: Type.Optional(
    Type.String({
      pattern: NO_CONTROL_CHARACTERS_PATTERN,
      minLength: 1,
      maxLength: 200,
      description: 'Only this client’s.',
    }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'From `_links.next` of the previous page.' })),
});

const PortalLinkView = Type.Object({
  Id: Type.String({ description: 'The link’s id (`pl_…`), never its token.' }),
  ClientId: Type.String(),
  CustomerId: Customer,
  State: Type.Union([Type.Literal('usable'), Type.Literal('used'), Type.Literal('revoked'), Type.Literal('expired')]),
  CreatedAtUtc: Timestamp,
  ExpiresAtUtc: Timestamp,
  UsedAtUtc: NullableTimestamp,
  RevokedAtUtc: NullableTimestamp,
  _links: Links,
});

const PortalSessionView = Type.Object({
  Id: Type.String({ description: 'The session’s id (`ps_…`), never its cookie.' }),
  ClientId: Type.String(),
  ClientName: Type.String(),
  CustomerId: Customer,
  Via: Type.Union([Type.Literal('link'), Type.Literal('owner')], {
    description: '`link`: opened with a portal link (LinkId); `owner`: by the client’s owner from the console.',
  }),
  LinkId: Type.Union([Type.String(), Type.Null()]),
  CreatedAtUtc: Timestamp,
  ExpiresAtUtc: Timestamp,
  _links: Links,
});

const LinkIdParams = Type.Object({ id: Type.String({ pattern: PORTAL_LINK_ID, description: 'A link id (`pl_…`).' }) });
const SessionIdParams = Type.Object({
  id: Type.String({ pattern: PORTAL_SESSION_ID, description: 'A session id (`ps_…`).' }),
});
const Ended = { 204: Type.Null({ description: 'Ended.' }) };

function linkState(link: PortalLinkRecord, now: Date): 'usable' | 'used' | 'revoked' | 'expired' {
  if (link.revokedAt) return 'revoked';
  if (link.usedAt) return 'used';
  return link.expiresAt <= now ? 'expired' : 'usable';
}

const iso = (d: Date | undefined) => (d ? d.toISOString() : null);

function linkView(link: PortalLinkRecord, baseUrl: string, now: Date) {
  const self = `${baseUrl}/api/admin/portal-links/${link.id}`;
  return {
    Id: link.id,
    ClientId: link.clientId,
    CustomerId: link.customerId ?? null,
    State: linkState(link, now),
    CreatedAtUtc: link.createdAt.toISOString(),
    ExpiresAtUtc: link.expiresAt.toISOString(),
    UsedAtUtc: iso(link.usedAt),
    RevokedAtUtc: iso(link.revokedAt),
    _links: { revoke: { href: self, method: 'DELETE' } },
  };
}

function sessionView(session: PortalSessionRow, baseUrl: string) {
  return {
    Id: session.publicId,
    ClientId: session.clientId,
    ClientName: session.clientName,
    CustomerId: session.customerId ?? null,
    Via: session.via,
    LinkId: session.linkId ?? null,
    CreatedAtUtc: session.createdAt.toISOString(),
    ExpiresAtUtc: session.expiresAt.toISOString(),
    _links: { end: { href: `${baseUrl}/api/admin/portal-sessions/${session.publicId}`, method: 'DELETE' } },
  };
}

/** The cursor is not signed: its time and id are checked before they reach SQL. */
function beforeOf(cursor: string | undefined, idPattern: string): { createdAt: Date; id: string } | undefined {
  if (cursor === undefined) return undefined;
  const decoded = decodeCursor(cursor, { t: 'number', i: 'string' });
  const t = decoded?.t as number;
  if (!decoded || !Number.isInteger(t) || !isStorableTime(t) || !new RegExp(idPattern).test(decoded.i as string))
    throw new Problem('invalidParameter', 'cursor is not one this list gave out', {
      errors: [{ pointer: '/cursor', detail: 'use the next link of the previous page' }],
    });
  return { createdAt: new Date(t), id: decoded.i as string };
}

export async function portalAdminRoutes(
  fastify: FastifyInstance,
  options: { db: Db; portals: PortalStore },
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, portals } = options;

  app.get(
    '/api/admin/portal-links',
    {
      config: { scope: 'admin:read' },
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'Portal links issued (kept until a day after they expire), newest first; `client_id` narrows',
        querystring: ListQuery,
        response: { 200: Type.Object({ Items: Type.Array(PortalLinkView), _links: Links }) },
      },
    },
    async (request, reply) => {
      const { client_id: clientId, limit, cursor } = request.query;
      const page = await listLinks(db, { clientId, limit, before: beforeOf(cursor, PORTAL_LINK_ID) });
      const baseUrl = publicBaseUrl(request);
      const now = new Date();
      const last = page.items.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.items.map((link) => linkView(link, baseUrl, now)),
        page.hasMore && last ? { parameter: 'cursor', cursor: { t: last.createdAt.getTime(), i: last.id } } : undefined,
      );
    },
  );

  app.delete(
    '/api/admin/portal-links/:id',
    {
      config: { scope: 'admin:write' },
      schema: {
        tags: TAGS,
        summary: 'Revoke a portal link: unused, it opens nothing; the portal sessions it opened end at once',
        params: LinkIdParams,
        response: Ended,
      },
    },
    async (request, reply) => {
      const now = new Date();
      const link = await db
        .transaction()
        .execute((trx) => revokeLink(trx, request.params.id, now, auditContext(request)));
      await portals.endOfLink(link.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/admin/portal-sessions',
    {
      config: { scope: 'admin:read' },
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'Portal sessions open now, newest first; `client_id` narrows',
        querystring: ListQuery,
        response: { 200: Type.Object({ Items: Type.Array(PortalSessionView), _links: Links }) },
      },
    },
    async (request, reply) => {
      const { client_id: clientId, limit, cursor } = request.query;
      const before = beforeOf(cursor, PORTAL_SESSION_ID);
      const rows = await portals.list({ now: new Date(), clientId, before, limit });
      const items = rows.slice(0, limit);
      const baseUrl = publicBaseUrl(request);
      const last = items.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        items.map((session) => sessionView(session, baseUrl)),
        rows.length > limit && last
          ? { parameter: 'cursor', cursor: { t: last.createdAt.getTime(), i: last.publicId } }
          : undefined,
      );
    },
  );

  app.delete(
    '/api/admin/portal-sessions/:id',
    {
      config: { scope: 'admin:write' },
      schema: {
        tags: TAGS,
        summary: 'End a portal session at once: its next request is refused (401)',
        params: SessionIdParams,
        response: Ended,
      },
    },
    async (request, reply) => {
      const id = request.params.id;
      const ended = await db.transaction().execute(async (trx) => {
        const session = await portals.end(id, trx);
        if (session)
          await recordAudit(trx, {
            ...auditContext(request),
            action: 'portal_session.ended',
            target: { type: 'portal_session', id },
            details: {
              client_id: session.clientId,
              via: session.via,
              ...(session.linkId && { portal_link_id: session.linkId }),
              ...(session.customerId && { customer_id: session.customerId }),
            },
          });
        return session;
      });
      if (!ended) throw new Problem('notFound', `portal session ${id} is not open (it ended, or never was)`);
      return reply.code(204).send(null);
    },
  );
}
