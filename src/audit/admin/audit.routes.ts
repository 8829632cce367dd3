// GET /api/admin/audit (docs/security.md, "The audit trail"): the trail newest first, filtered by actor, action,
// target and time range, in cursor pages. `signet audit` reads the same query (src/audit/audit.repository.ts).
// GET /api/admin/audit/verify walks the hash chain like `signet audit verify` (src/audit/audit-chain.ts).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Db } from '../../db/executor.ts';
import { listAudit } from '../audit.repository.ts';
import { auditView } from '../audit-view.ts';
import { decodeCursor, encodeCursor, requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import { isStorableTime } from '../../db/codecs.ts';
import { AuditListQuery, AuditListResponses, AuditVerifyResponses } from './audit.schemas.ts';
import { verifyAuditChain } from '../audit-chain.ts';

const TAGS = ['admin'];

/** The position a cursor stands for: entries older than `s` (their append order). */
function parseCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const decoded = decodeCursor(cursor, { s: 'number' });
  const seq = decoded?.s;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1)
    throw new Problem('invalidParameter', 'cursor is not one this service issued; start again without it', {
      errors: [{ pointer: '/cursor', detail: 'invalid cursor' }],
    });
  return seq;
}

/**
 * An RFC 3339 time the schema accepted, as a Date. ajv's date-time takes a leap second, which Date cannot
 * hold, and years before 0001 (`0001-01-01T00:00:00+01:00` too), which PostgreSQL refuses (a 500 otherwise).
 */
function parseTime(value: string | undefined, name: string): Date | undefined {
  if (value === undefined) return undefined;
  const time = new Date(value);
  if (!isStorableTime(time.getTime()))
    throw new Problem('invalidParameter', `${name} is not a time this service can compare`, {
      errors: [{ pointer: `/${name}`, detail: 'RFC 3339 date-time from year 0001 to 9999, without a leap second' }],
    });
  return time;
}

export async function auditRoutes(fastify: FastifyInstance, options: { db: Db }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = options;

  app.get(
    '/api/admin/audit',
    {
      config: { scope: 'admin:read' },
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'The audit trail, newest first',
        querystring: AuditListQuery,
        response: AuditListResponses,
      },
    },
    async (request, reply) => {
      const { actor, action, target, limit } = request.query;
      const filters = {
        actor,
        action,
        target,
        since: parseTime(request.query.since, 'since'),
        until: parseTime(request.query.until, 'until'),
      };
      const beforeSeq = parseCursor(request.query.cursor);
      const { entries, more } = await listAudit(db, filters, { limit, beforeSeq });
      const last = entries.at(-1);
      const next = more && last ? { parameter: 'cursor', cursor: encodeCursor({ s: last.seq }) } : undefined;
      // private: the trail is for this admin's eyes; no-cache: a new entry can appear at any moment.
      reply.header('cache-control', 'private, no-cache');
      return listPage(request, reply, publicBaseUrl(request), entries.map(auditView), next);
    },
  );

  app.get(
    '/api/admin/audit/verify',
    {
      config: { scope: 'admin:read' },
      schema: {
        tags: TAGS,
        summary: 'Verify the audit trail’s hash chain; names the first entry where it breaks',
        response: AuditVerifyResponses,
      },
    },
    async (_request, reply) => {
      const verdict = await verifyAuditChain(db);
      reply.header('cache-control', 'no-store');
      return {
        Intact: verdict.intact,
        Checked: verdict.checked,
        FirstId: verdict.firstId,
        LastId: verdict.lastId,
        Broken: verdict.broken ? { Id: verdict.broken.id, Reason: verdict.broken.reason } : null,
      };
    },
  );
}
