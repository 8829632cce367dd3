// The admin API's grants and sessions (docs/guides/admin-api.md, Grants and sessions): one TypeBox schema
// per request part, and the representations, which never hold a token or a session cookie's value.
import Type from 'typebox';
import { NO_CONTROL_CHARACTERS_PATTERN } from '../../http/problems/validation.ts';
import { problemResponse } from '../../http/representation/openapi.ts';

const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });
const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

export const UserIdParams = Type.Object({
  id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 64,
    description: 'The user id (their `sub`).',
  }),
});
export const ClientIdParams = Type.Object({
  client_id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 200,
    description: 'The client’s `client_id`.',
  }),
});
export const GrantIdParams = Type.Object({
  grant_id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 200,
    description: 'The grant id (`Id` of a listed grant).',
  }),
});
export const SessionIdParams = Type.Object({
  session_id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 200,
    description: 'The session id (`Id` of a listed session).',
  }),
});

export const PageQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'From `_links.next` of the previous page.' })),
});

export const Grant = Type.Object({
  Id: Type.String({ description: 'The grant id: not a token, nothing can be redeemed with it.' }),
  ClientId: Type.String(),
  Account: Type.String({ description: 'The user’s `sub`.' }),
  Scopes: Type.Array(Type.String(), { description: 'Every scope consented: OpenID and API scopes.' }),
  CreatedAtUtc: Type.Union([Timestamp, Type.Null()]),
  ExpiresAtUtc: Type.Union([Timestamp, Type.Null()]),
  _links: Links,
});

export const Session = Type.Object({
  Id: Type.String({ description: 'The session’s uid: not the value of its cookie.' }),
  Account: Type.String({ description: 'The user’s `sub`.' }),
  ClientIds: Type.Array(Type.String(), { description: 'The clients signed in through this session.' }),
  SignedInAtUtc: Type.Union([Timestamp, Type.Null()]),
  ExpiresAtUtc: Type.Union([Timestamp, Type.Null()]),
  _links: Links,
});

const NO_CONTENT = { type: 'null', description: 'Done' };

export const GrantListResponses = { 200: Type.Object({ Items: Type.Array(Grant), _links: Links }) };
export const SessionListResponses = { 200: Type.Object({ Items: Type.Array(Session), _links: Links }) };
export const RevokeResponses = {
  204: NO_CONTENT,
  404: problemResponse('No such grant or session (it may have expired or been revoked already).'),
};
