// GET /api/me/clients (docs/guides/admin-api.md, Owned clients): the clients a signed-in user owns, for the
// integrator portal. Resource JSON in the contract's PascalCase; never a secret.
import Type from 'typebox';
import type { Static } from 'typebox';

const Link = Type.Object({ href: Type.String({ format: 'uri' }), method: Type.String() });
const Links = Type.Record(Type.String(), Link);

export const OwnedClientListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});
export type OwnedClientListQuery = Static<typeof OwnedClientListQuery>;

const OwnedClient = Type.Object({
  ClientId: Type.String({ description: 'The client_id (`cl_…`).' }),
  Name: Type.String(),
  _links: Type.Object(
    {
      webhooks: Type.Object(
        { href: Type.String({ format: 'uri' }), method: Type.String() },
        {
          description:
            'The client’s webhook endpoints: the webhook API, called with an access token of this client (the console mints one for the owner).',
        },
      ),
    },
    { additionalProperties: Link },
  ),
});
const OwnedClientList = Type.Object({ Items: Type.Array(OwnedClient), _links: Links });

export const OwnedClientListResponses = {
  200: OwnedClientList,
};
