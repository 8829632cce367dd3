// The admin API's users (docs/guides/admin-api.md, Users): one TypeBox schema per request part, and the
// representation, which never holds the password or its hash.
import Type from 'typebox';
import { NO_CONTROL_CHARACTERS_PATTERN } from '../../http/problems/validation.ts';
import type { Static } from 'typebox';
import { USER_ROLES } from '../identity/users.service.ts';
import { problemResponse } from '../../http/representation/openapi.ts';

const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });
const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

export const UserIdParams = Type.Object({
  id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 64,
    description: 'The user id (their `sub`, a UUID).',
  }),
});

const Email = Type.String({ minLength: 3, maxLength: 254, description: 'Stored lower-cased; unique.' });
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Roles = Type.Array(Type.Union(USER_ROLES.map((role) => Type.Literal(role))), {
  maxItems: USER_ROLES.length * 2,
  description: `Roles: ${USER_ROLES.join(', ')}. \`admin\` lets the user's tokens carry admin:read and admin:write, \`auditor\` admin:read only (docs/security.md, "Roles").`,
});
// Lengths are checked by the service, whose message never echoes the value.
const Password = Type.String({ maxLength: 1024, description: 'Never stored, logged or shown: only its hash is kept.' });

export const UserListQuery = Type.Object({
  email: Type.Optional(
    Type.String({
      pattern: NO_CONTROL_CHARACTERS_PATTERN,
      minLength: 1,
      maxLength: 254,
      description: 'Addresses containing this text.',
    }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});
export type UserListQuery = Static<typeof UserListQuery>;

export const CreateUserBody = Type.Object(
  { Email, Name, Password, Roles: Type.Optional(Roles) },
  { additionalProperties: false },
);
export type CreateUserBody = Static<typeof CreateUserBody>;

export const PatchUserBody = Type.Object(
  { Email: Type.Optional(Email), Name: Type.Optional(Name), Roles: Type.Optional(Roles) },
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      'JSON Merge Patch (RFC 7396) of the members that can change. A change of Roles revokes the user’s grants.',
  },
);
export type PatchUserBody = Static<typeof PatchUserBody>;

export const SetPasswordBody = Type.Object({ Password }, { additionalProperties: false });
export type SetPasswordBody = Static<typeof SetPasswordBody>;

export const User = Type.Object({
  Id: Type.String(),
  Email: Type.String(),
  Name: Type.String(),
  Roles: Type.Array(Type.String()),
  Disabled: Type.Boolean(),
  DisabledAtUtc: Type.Union([Timestamp, Type.Null()]),
  CreatedAtUtc: Timestamp,
  _links: Links,
});
const UserList = Type.Object({ Items: Type.Array(User), _links: Links });

const EMAIL_TAKEN = 'Another user has this e-mail address (`email-taken`).';
const NO_CONTENT = { type: 'null', description: 'Done' };

export const UserListResponses = { 200: UserList };
export const UserResponses = { 200: User };
export const CreateUserResponses = { 201: User, 409: problemResponse(EMAIL_TAKEN) };
export const PatchUserResponses = {
  200: User,
  409: problemResponse(EMAIL_TAKEN),
  412: problemResponse('If-Match names another version of the user: fetch it again.'),
};
export const NoContentResponses = { 204: NO_CONTENT };
