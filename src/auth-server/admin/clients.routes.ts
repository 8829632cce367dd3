// /api/admin/clients and /api/admin/registration-tokens (docs/guides/admin-api.md, Clients, Registration
// tokens): HTTP only, one call of the clients service the CLI uses (src/auth-server/clients/clients.service.ts,
// registration-tokens.ts) per handler; the caller is the audit actor (context.ts). Reading needs admin:read,
// changing admin:write.
import { createHash } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  clientMetadataView,
  ClientRuleError,
  createClientsService,
  type ClientChanges,
  type ClientRecord,
  type OwnerChange,
} from '../clients/clients.service.ts';
import {
  findRegistrationToken,
  issueRegistrationToken,
  listRegistrationTokens,
  revokeRegistrationToken,
  type RegistrationTokenRecord,
} from '../clients/registration-tokens.ts';
import type { RegistrationPolicy } from '../clients/registration-policy.ts';
import type { Db } from '../../db/executor.ts';
import { evaluatePreconditions } from '../../http/representation/conditional.ts';
import { requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import * as schemas from './clients.schemas.ts';
import { auditContext } from '../../http/admin/context.ts';
import { clientCursorOf } from '../../http/admin/query-params.ts';

interface ClientRouteOptions {
  db: Db;
  /** Every API scope a client may be registered for (app.ts API_SCOPES). */
  apiScopes: readonly string[];
  /** The RFC 7591 registration endpoint when DYNAMIC_REGISTRATION is on; undefined when off. */
  registrationEndpoint: string | undefined;
  /** What a registration token may allow (registration-policy.ts). */
  registrationPolicy: RegistrationPolicy;
}

const TAGS = ['admin'];
const read = { scope: 'admin:read' };
const write = { scope: 'admin:write' };

/** The service's rule violations as 422 problems pointing at the member (like the orders API). */
function asProblem(err: unknown): never {
  if (err instanceof ClientRuleError) throw err.toProblem();
  throw err;
}

const scopeList = (scope: string | undefined): string[] | undefined =>
  scope === undefined ? undefined : scope.split(' ').filter(Boolean);

export async function clientRoutes(fastify: FastifyInstance, options: ClientRouteOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const clients = createClientsService({ db: options.db, apiScopes: options.apiScopes });

  app.get(
    '/api/admin/clients',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'List OAuth clients, oldest first (never their secrets)',
        querystring: schemas.ClientListQuery,
        response: schemas.ClientListResponses,
      },
    },
    async (request, reply) => {
      const { limit, cursor, owner } = request.query;
      const page = await clients.list({ limit, after: clientCursorOf(cursor), ownerEmail: owner });
      const baseUrl = publicBaseUrl(request);
      const last = page.clients.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.clients.map((client) => clientView(client, baseUrl)),
        page.more && last ? { parameter: 'cursor', cursor: { c: last.createdAt, i: last.clientId } } : undefined,
      );
    },
  );

  app.get(
    '/api/admin/clients/:client_id',
    {
      config: read,
      schema: {
        tags: TAGS,
        summary: 'Read a client (never its secret)',
        params: schemas.ClientIdParams,
        response: schemas.ClientResponses,
      },
    },
    async (request, reply) => sendClient(request, reply, await clients.get(request.params.client_id)),
  );

  app.post(
    '/api/admin/clients',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Create a client; a confidential client’s secret is in this answer only',
        body: schemas.CreateClientBody,
        response: schemas.CreateClientResponses,
      },
    },
    async (request, reply) => {
      const body = request.body;
      const { client, clientSecret } = await clients
        .create(
          {
            name: body.client_name,
            type: body.client_type,
            grantTypes: body.grant_types,
            redirectUris: body.redirect_uris ?? [],
            postLogoutRedirectUris: body.post_logout_redirect_uris ?? [],
            scopes: scopeList(body.scope) ?? [],
            corsOrigins: body.cors_origins ?? [],
            firstParty: body.first_party ?? false,
            resourceServer: body.resource_server ?? false,
            owner: body.owner,
          },
          auditContext(request),
        )
        .catch(asProblem);
      reply.code(201).header('location', clientUrl(publicBaseUrl(request), client.clientId));
      return { ...sendClient(request, reply, client), ...(clientSecret ? { client_secret: clientSecret } : {}) };
    },
  );

  app.patch(
    '/api/admin/clients/:client_id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary:
          'Change the name, redirect and post-logout URIs, scopes, CORS origins, first-party or owner (If-Match)',
        params: schemas.ClientIdParams,
        body: schemas.PatchClientBody,
        response: schemas.PatchClientResponses,
      },
    },
    async (request, reply) => {
      const body = request.body;
      const changes: ClientChanges & OwnerChange = {
        name: body.client_name,
        redirectUris: body.redirect_uris,
        postLogoutRedirectUris: body.post_logout_redirect_uris,
        scopes: scopeList(body.scope),
        corsOrigins: body.cors_origins,
        firstParty: body.first_party,
        owner: body.owner,
      };
      const client = await clients
        .update(request.params.client_id, changes, auditContext(request), (current) =>
          checkPreconditions(request, current),
        )
        .catch(asProblem);
      return sendClient(request, reply, client);
    },
  );

  app.post(
    '/api/admin/clients/:client_id/rotate-secret',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Replace the secret: the old one stops working at once; the new one is in this answer only',
        params: schemas.ClientIdParams,
        response: schemas.RotateSecretResponses,
      },
    },
    async (request, reply) => {
      const { client, clientSecret } = await clients.rotateSecret(request.params.client_id, auditContext(request));
      return { ...sendClient(request, reply, client), client_secret: clientSecret };
    },
  );

  app.delete(
    '/api/admin/clients/:client_id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Delete a client with every grant and token issued to it',
        params: schemas.ClientIdParams,
        response: schemas.DeleteClientResponses,
      },
    },
    async (request, reply) => {
      await clients.remove(request.params.client_id, auditContext(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/admin/registration-tokens',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Issue an initial access token for dynamic client registration (RFC 7591 §3), shown once',
        body: schemas.RegistrationTokenBody,
        response: schemas.RegistrationTokenResponses,
      },
    },
    async (request, reply) => {
      const endpoint = options.registrationEndpoint;
      if (!endpoint) throw new Problem('notFound', 'dynamic client registration is off: set DYNAMIC_REGISTRATION=true');
      const issued = await issueRegistrationToken(
        options.db,
        {
          expiresInSeconds: request.body.expires_in ?? 86_400,
          scopes: scopeList(request.body.scope) ?? [],
          maxUses: request.body.max_uses,
          description: request.body.description,
          policy: options.registrationPolicy,
        },
        auditContext(request),
      ).catch(asProblem);
      const baseUrl = publicBaseUrl(request);
      reply.code(201).header('cache-control', 'no-store').header('location', registrationTokenUrl(baseUrl, issued.id));
      return {
        ...registrationTokenView(issued, baseUrl),
        registration_token: issued.token,
        registration_endpoint: endpoint,
      };
    },
  );

  app.get(
    '/api/admin/registration-tokens',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'List registration tokens, newest first (never the tokens themselves)',
        querystring: schemas.RegistrationTokenListQuery,
        response: schemas.RegistrationTokenListResponses,
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      const page = await listRegistrationTokens(options.db, { limit, after: clientCursorOf(cursor) });
      const baseUrl = publicBaseUrl(request);
      const last = page.tokens.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.tokens.map((token) => registrationTokenView(token, baseUrl)),
        page.more && last ? { parameter: 'cursor', cursor: { c: last.createdAt, i: last.id } } : undefined,
      );
    },
  );

  app.get(
    '/api/admin/registration-tokens/:id',
    {
      config: read,
      schema: {
        tags: TAGS,
        summary: 'Read a registration token: its scopes, uses and state (never the token)',
        params: schemas.RegistrationTokenIdParams,
        response: schemas.RegistrationTokenReadResponses,
      },
    },
    async (request, reply) => {
      const token = await findRegistrationToken(options.db, request.params.id);
      if (!token) throw new Problem('notFound', `no registration token ${request.params.id}`);
      reply.header('cache-control', 'no-store');
      return registrationTokenView(token, publicBaseUrl(request));
    },
  );

  app.delete(
    '/api/admin/registration-tokens/:id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Revoke a registration token at once (the clients it registered stay)',
        params: schemas.RegistrationTokenIdParams,
        response: schemas.RegistrationTokenRevokeResponses,
      },
    },
    async (request, reply) => {
      await revokeRegistrationToken(options.db, request.params.id, auditContext(request));
      return reply.code(204).send(null);
    },
  );
}

function registrationTokenUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/admin/registration-tokens/${id}`;
}

/** A registration token without its value, which only the answer of its issue shows. */
function registrationTokenView(t: RegistrationTokenRecord, baseUrl: string) {
  return {
    id: t.id,
    scope: t.scopes.join(' '),
    max_uses: t.maxUses,
    use_count: t.useCount,
    status: t.status,
    description: t.description,
    created_by: t.createdBy,
    created_at: t.createdAt,
    expires_at: t.expiresAt,
    revoked_at: t.revokedAt,
    _links: {
      self: { href: registrationTokenUrl(baseUrl, t.id), method: 'GET' },
      revoke: { href: registrationTokenUrl(baseUrl, t.id), method: 'DELETE' },
    },
  };
}

function clientUrl(baseUrl: string, clientId: string): string {
  return `${baseUrl}/api/admin/clients/${clientId}`;
}

/** A strong tag over everything the representation shows (RFC 9110 §8.8.3): any change makes a new one. */
function entityTag(client: ClientRecord): string {
  const state = JSON.stringify([client, 'v1']);
  return `"c-${createHash('sha256').update(state).digest('base64url').slice(0, 22)}"`;
}

/** If-Match / If-Unmodified-Since… against the state read inside the update's transaction (412 otherwise). */
function checkPreconditions(request: FastifyRequest, client: ClientRecord): void {
  const etag = entityTag(client);
  if (evaluatePreconditions(request.method, request.headers, { etag }) !== 'proceed')
    throw new Problem(
      'preconditionFailed',
      `client ${client.clientId} has changed; fetch it again (current ETag ${etag})`,
      {
        headers: { etag },
      },
    );
}

function sendClient(request: FastifyRequest, reply: FastifyReply, client: ClientRecord) {
  reply.header('etag', entityTag(client)).header('cache-control', 'no-store');
  return clientView(client, publicBaseUrl(request));
}

/** The names `signet client … --json` prints (RFC 7591 §2), and links. */
function clientView(c: ClientRecord, baseUrl: string) {
  return { ...clientMetadataView(c), _links: { self: { href: clientUrl(baseUrl, c.clientId), method: 'GET' } } };
}
