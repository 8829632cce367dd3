// Who is calling the admin API, in the terms of the audit trail: the user (`sub`) behind the token, or
// the client itself for a client-credentials token; with the request id and the client's address.
import type { FastifyRequest } from 'fastify';
import type { AuditEntry } from '../../audit/audit.ts';
import { Problem } from '../problems/problems.ts';

type AuditContext = Required<Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>>;

export function auditContext(request: FastifyRequest): AuditContext {
  const principal = request.principal;
  if (!principal) throw new Problem('unauthorized', 'an access token is required');
  return {
    actor: principal.isClient
      ? { type: 'client', id: principal.clientId ?? principal.subject }
      : { type: 'user', id: principal.subject },
    requestId: request.id,
    sourceAddress: request.clientOrigin.ip, // TRUST_PROXY honoured (src/http/admission/forwarded.ts), unlike request.ip
  };
}
