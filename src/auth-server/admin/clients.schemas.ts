// The admin API's clients (docs/guides/admin-api.md, Clients): one TypeBox schema per request part, and the
// representation, by OAuth's own client metadata names (RFC 7591 §2), as `signet client … --json` prints
// them. A secret appears only in the answers of create and rotate-secret, once.
import Type from 'typebox';
import { NO_CONTROL_CHARACTERS_PATTERN } from '../../http/problems/validation.ts';
import type { Static } from 'typebox';
import { GRANT_TYPES } from '../clients/clients.repository.ts';
import { MAX_REGISTRATION_TOKEN_SECONDS, MAX_REGISTRATION_TOKEN_USES } from '../clients/registration-tokens.ts';
import { problemResponse } from '../../http/representation/openapi.ts';

const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });
const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

export const ClientIdParams = Type.Object({
  client_id: Type.String({
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
    minLength: 1,
    maxLength: 64,
    description: 'The client_id (`cl_…`).',
  }),
});
export type ClientIdParams = Static<typeof ClientIdParams>;

const Uris = (description: string) => Type.Array(Type.String({ maxLength: 2000 }), { maxItems: 50, description });
const Name = Type.String({ maxLength: 200, description: 'Shown on the consent page.' });
const Scope = Type.String({
  maxLength: 2000,
  description: 'Space-separated API scopes (and openid profile email offline_access for clients that sign users in).',
});
const RedirectUris = Uris('Exact-match redirect URIs: https, or http on localhost/127.0.0.1; no fragment.');
const PostLogoutUris = Uris('Where RP-initiated logout may return; the same rules as redirect URIs.');
const CorsOrigins = Uris('Browser origins (scheme://host[:port]) allowed to call the token endpoint.');
const FirstParty = Type.Boolean({ description: 'Signet’s own application: no consent page.' });
const OwnerEmail = Type.String({ minLength: 3, maxLength: 254, pattern: NO_CONTROL_CHARACTERS_PATTERN });
const Owner = Type.Union([OwnerEmail, Type.Null()], {
  description:
    'The e-mail address of the Signet user who owns the client and manages its webhooks in the console; null: none. An unknown address is a 422 pointing at /owner. Deleting the user leaves the client without an owner.',
});

export const ClientListQuery = Type.Object({
  owner: Type.Optional(
    Type.String({ ...OwnerEmail, description: 'Only the clients this user (e-mail address) owns.' }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});
export type ClientListQuery = Static<typeof ClientListQuery>;

export const CreateClientBody = Type.Object(
  {
    client_name: Name,
    client_type: Type.Union([Type.Literal('confidential'), Type.Literal('public')]),
    grant_types: Type.Array(Type.Union(GRANT_TYPES.map((grant) => Type.Literal(grant))), {
      minItems: 1,
      maxItems: GRANT_TYPES.length,
    }),
    redirect_uris: Type.Optional(RedirectUris),
    post_logout_redirect_uris: Type.Optional(PostLogoutUris),
    scope: Type.Optional(Scope),
    cors_origins: Type.Optional(CorsOrigins),
    first_party: Type.Optional(FirstParty),
    resource_server: Type.Optional(
      Type.Boolean({ description: 'May introspect every access token (confidential clients only).' }),
    ),
    owner: Type.Optional(Owner),
  },
  { additionalProperties: false },
);
export type CreateClientBody = Static<typeof CreateClientBody>;

export const PatchClientBody = Type.Object(
  {
    client_name: Type.Optional(Name),
    redirect_uris: Type.Optional(RedirectUris),
    post_logout_redirect_uris: Type.Optional(PostLogoutUris),
    scope: Type.Optional(Scope),
    cors_origins: Type.Optional(CorsOrigins),
    first_party: Type.Optional(FirstParty),
    owner: Type.Optional(Owner),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      'JSON Merge Patch (RFC 7396) of the members that can change; the result must pass the rules of a new client. client_type and grant_types are fixed.',
  },
);
export type PatchClientBody = Static<typeof PatchClientBody>;

const clientMembers = {
  client_id: Type.String(),
  client_name: Type.String(),
  client_type: Type.String({ enum: ['confidential', 'public'] }),
  grant_types: Type.Array(Type.String()),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  scope: Type.String(),
  cors_origins: Type.Array(Type.String()),
  first_party: Type.Boolean(),
  resource_server: Type.Boolean(),
  created_at: Timestamp,
  secret_rotated_at: Type.Union([Timestamp, Type.Null()]),
  owner: Type.Union([Type.String(), Type.Null()], { description: 'The owner’s e-mail address; null: none.' }),
  _links: Links,
};

export const Client = Type.Object(clientMembers);
const ClientWithSecret = Type.Object({
  ...clientMembers,
  client_secret: Type.Optional(
    Type.String({ description: 'Confidential clients only; shown this once, only its hash is stored.' }),
  ),
});
const ClientList = Type.Object({ Items: Type.Array(Client), _links: Links });

export const RegistrationTokenBody = Type.Object(
  {
    expires_in: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: MAX_REGISTRATION_TOKEN_SECONDS,
        default: 86_400,
        description: 'Seconds until the token expires (default one day, at most 90 days).',
      }),
    ),
    scope: Type.Optional(
      Type.String({
        maxLength: 2000,
        description:
          'Space-separated API scopes a client registered with the token may have (default: none), within the registration policy (REGISTRATION_SCOPES); an admin scope is a 422.',
      }),
    ),
    max_uses: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_REGISTRATION_TOKEN_USES,
        default: 1,
        description: 'How many clients the token may register (default 1).',
      }),
    ),
    description: Type.Optional(
      Type.String({
        maxLength: 200,
        pattern: NO_CONTROL_CHARACTERS_PATTERN,
        description: 'What the token is for, shown in the list.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type RegistrationTokenBody = Static<typeof RegistrationTokenBody>;

export const RegistrationTokenIdParams = Type.Object({
  id: Type.String({ pattern: '^rt_[0-9a-f]{24}$', description: 'The token’s id (`rt_…`), never the token.' }),
});

export const RegistrationTokenListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});

const registrationTokenMembers = {
  id: Type.String({ description: 'Names the token in the list, the audit trail and DELETE; not the token.' }),
  scope: Type.String(),
  max_uses: Type.Integer(),
  use_count: Type.Integer({ description: 'Clients registered with it so far.' }),
  status: Type.String({ enum: ['active', 'used_up', 'expired', 'revoked'] }),
  description: Type.Union([Type.String(), Type.Null()]),
  created_by: Type.String({ description: 'The audit actor who issued it, `type:id`.' }),
  created_at: Timestamp,
  expires_at: Timestamp,
  revoked_at: Type.Union([Timestamp, Type.Null()]),
  _links: Links,
};

export const RegistrationTokenView = Type.Object(registrationTokenMembers);

export const RegistrationToken = Type.Object({
  ...registrationTokenMembers,
  registration_token: Type.String({
    description: 'The initial access token (RFC 7591 §3), shown this once; only its hash is stored.',
  }),
  registration_endpoint: Type.String({ format: 'uri' }),
});

const INVALID = 'The client would not work or would be unsafe; `errors` points at the member to change.';
const NO_CONTENT = { type: 'null', description: 'Deleted, with every grant and token issued to it' };

export const ClientListResponses = { 200: ClientList };
export const ClientResponses = { 200: Client };
export const CreateClientResponses = { 201: ClientWithSecret, 422: problemResponse(INVALID) };
export const PatchClientResponses = {
  200: Client,
  412: problemResponse('If-Match names another version of the client: fetch it again.'),
  422: problemResponse(INVALID),
};
export const RotateSecretResponses = {
  200: ClientWithSecret,
  409: problemResponse('A public client has no secret (`public-client`).'),
};
export const DeleteClientResponses = { 204: NO_CONTENT };
const REGISTRATION_OFF = problemResponse(
  'Dynamic registration is off (DYNAMIC_REGISTRATION) or there is no built-in authorization server.',
);
export const RegistrationTokenResponses = {
  201: RegistrationToken,
  404: REGISTRATION_OFF,
  422: problemResponse('A scope the registration policy does not allow (an admin scope never is), or a bad value.'),
};
export const RegistrationTokenListResponses = {
  200: Type.Object({ Items: Type.Array(RegistrationTokenView), _links: Links }),
};
export const RegistrationTokenReadResponses = { 200: RegistrationTokenView, 404: problemResponse('No such token.') };
export const RegistrationTokenRevokeResponses = {
  204: { type: 'null', description: 'Revoked: no client can be registered with it any more.' },
  404: problemResponse('No such token.'),
};
