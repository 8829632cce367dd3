// Schemas of GET /api/admin/audit: they validate the query, type the handler and feed the OpenAPI document.
import Type from 'typebox';
import { NO_CONTROL_CHARACTERS_PATTERN } from '../../http/problems/validation.ts';
import { AUDIT_ACTIONS } from '../audit.ts';

const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });
const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

export const AuditEntry = Type.Object({
  Id: Type.String({ description: 'Entry id (`aud_…`).' }),
  OccurredAtUtc: Timestamp,
  Actor: Type.Object({
    Type: Type.Union([
      Type.Literal('user'),
      Type.Literal('client'),
      Type.Literal('cli'),
      Type.Literal('system'),
      Type.Literal('anonymous'),
    ]),
    Id: Type.String({
      description:
        'user: the `sub` (`unknown` for a sign-in attempt on an account that does not exist); client: the `client_id`; cli: the OS user; system: `signet`; anonymous (a refused admin request without a valid token): its address.',
    }),
  }),
  Action: Type.String({ description: `One of: ${AUDIT_ACTIONS.map((a) => `\`${a}\``).join(', ')}.` }),
  Target: Type.Union([Type.Object({ Type: Type.String(), Id: Type.String() }), Type.Null()]),
  Outcome: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
  RequestId: Type.Union([Type.String({ description: 'The X-Request-Id of the request that did it.' }), Type.Null()]),
  SourceAddress: Type.Union([Type.String({ description: 'The client address (TRUST_PROXY honoured).' }), Type.Null()]),
  Details: Type.Record(Type.String(), Type.Unknown(), {
    description: 'Plain facts about the action (client_id, scopes, reason …); never a secret, password or token.',
  }),
});

const AuditList = Type.Object({ Items: Type.Array(AuditEntry), _links: Links });

export const AuditListQuery = Type.Object({
  actor: Type.Optional(
    Type.String({
      pattern: NO_CONTROL_CHARACTERS_PATTERN,
      minLength: 1,
      maxLength: 200,
      description: 'Only entries by this actor id.',
    }),
  ),
  action: Type.Optional(
    Type.Union(
      AUDIT_ACTIONS.map((a) => Type.Literal(a)),
      { description: 'Only entries of this action.' },
    ),
  ),
  target: Type.Optional(
    Type.String({
      pattern: NO_CONTROL_CHARACTERS_PATTERN,
      minLength: 1,
      maxLength: 200,
      description: 'Only entries whose target has this id.',
    }),
  ),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Entries at or after this time (RFC 3339).' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Entries before this time (RFC 3339).' })),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  cursor: Type.Optional(
    Type.String({ maxLength: 512, description: 'From `_links.next` of the previous page: older entries.' }),
  ),
});

export const AuditListResponses = { 200: AuditList };

export const AuditVerification = Type.Object({
  Intact: Type.Boolean({ description: 'Every link of the hash chain holds.' }),
  Checked: Type.Integer({ description: 'Entries verified (before the broken one, if any).' }),
  FirstId: Type.Union([Type.String(), Type.Null()], {
    description: 'The oldest entry: older ones may have been purged by retention (AUDIT_RETENTION).',
  }),
  LastId: Type.Union([Type.String(), Type.Null()]),
  Broken: Type.Union([
    Type.Object({
      Id: Type.String({ description: 'The first entry where the chain breaks.' }),
      Reason: Type.String({
        enum: ['altered', 'unlinked', 'unhashed'],
        description:
          '`altered`: its content no longer matches its hash; `unlinked`: it does not link to the entry before it (one was deleted or inserted); `unhashed`: it has no hash.',
      }),
    }),
    Type.Null(),
  ]),
});
export const AuditVerifyResponses = { 200: AuditVerification };
