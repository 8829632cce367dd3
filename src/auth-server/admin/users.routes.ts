// /api/admin/users (docs/guides/admin-api.md, Users): HTTP only, one call of the users service the CLI
// uses (src/auth-server/identity/users.service.ts) per handler; the caller is the audit actor (context.ts).
// Reading needs admin:read, changing admin:write.
import { createHash } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createUsersService, type User } from '../identity/users.service.ts';
import type { Db } from '../../db/executor.ts';
import { evaluatePreconditions } from '../../http/representation/conditional.ts';
import { decodeCursor, requireDecimalLimit } from '../../http/representation/cursor.ts';
import { publicBaseUrl } from '../../http/admission/origin.ts';
import { listPage } from '../../http/representation/pages.ts';
import { Problem } from '../../http/problems/problems.ts';
import { isUuid } from '../../http/problems/validation.ts';
import { isStorableTime } from '../../db/codecs.ts';
import { auditContext } from '../../http/admin/context.ts';
import * as schemas from './users.schemas.ts';

interface UserRouteOptions {
  db: Db;
  /** A user's roles, state or password changed (users.service.ts): the API's live check forgets them. */
  onUserChange?: (userId: string) => void;
}

const TAGS = ['admin'];
const read = { scope: 'admin:read' };
const write = { scope: 'admin:write' };
const CURSOR_SHAPE = { c: 'string', i: 'string' } as const;

/**
 * The user a cursor points after. It is not signed, so its time and id are checked as strictly as any
 * input before they reach SQL: a time neither database stores, or an id PostgreSQL's uuid column refuses,
 * is a 400 rather than a 500.
 */
function afterOf(cursor: string | undefined): { createdAt: string; id: string } | undefined {
  if (cursor === undefined) return undefined;
  const decoded = decodeCursor(cursor, CURSOR_SHAPE);
  if (!decoded || !isStorableTime(Date.parse(decoded.c as string)) || !isUuid(decoded.i as string))
    throw new Problem('invalidParameter', 'cursor is not one this list gave out', {
      errors: [{ pointer: '/cursor', detail: 'use the next link of the previous page' }],
    });
  return { createdAt: decoded.c as string, id: decoded.i as string };
}

export async function userRoutes(fastify: FastifyInstance, options: UserRouteOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const users = createUsersService({ db: options.db, onChange: options.onUserChange });

  app.get(
    '/api/admin/users',
    {
      config: read,
      preValidation: requireDecimalLimit,
      schema: {
        tags: TAGS,
        summary: 'List users, oldest first; `email` searches the addresses',
        querystring: schemas.UserListQuery,
        response: schemas.UserListResponses,
      },
    },
    async (request, reply) => {
      const { email, limit, cursor } = request.query;
      const page = await users.list({ emailContains: email, limit, after: afterOf(cursor) });
      const baseUrl = publicBaseUrl(request);
      const last = page.users.at(-1);
      reply.header('cache-control', 'no-store');
      return listPage(
        request,
        reply,
        baseUrl,
        page.users.map((user) => userView(user, baseUrl)),
        page.more && last ? { parameter: 'cursor', cursor: { c: last.createdAt, i: last.id } } : undefined,
      );
    },
  );

  app.get(
    '/api/admin/users/:id',
    {
      config: read,
      schema: { tags: TAGS, summary: 'Read a user', params: schemas.UserIdParams, response: schemas.UserResponses },
    },
    async (request, reply) => sendUser(request, reply, await users.get(request.params.id)),
  );

  app.post(
    '/api/admin/users',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Create a user',
        body: schemas.CreateUserBody,
        response: schemas.CreateUserResponses,
      },
    },
    async (request, reply) => {
      const { Email, Name, Password, Roles } = request.body;
      const user = await users.create(
        { email: Email, name: Name, password: Password, roles: Roles },
        auditContext(request),
      );
      reply.code(201).header('location', userUrl(publicBaseUrl(request), user.id));
      return sendUser(request, reply, user);
    },
  );

  app.patch(
    '/api/admin/users/:id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Change the name, e-mail address or roles (If-Match: the ETag read)',
        params: schemas.UserIdParams,
        body: schemas.PatchUserBody,
        response: schemas.PatchUserResponses,
      },
    },
    async (request, reply) => {
      const { Email, Name, Roles } = request.body;
      const user = await users.update(
        request.params.id,
        { email: Email, name: Name, roles: Roles },
        auditContext(request),
        (current) => checkPreconditions(request, current),
      );
      return sendUser(request, reply, user);
    },
  );

  app.put(
    '/api/admin/users/:id/password',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Set the user’s password (never shown again, never logged)',
        params: schemas.UserIdParams,
        body: schemas.SetPasswordBody,
        response: schemas.NoContentResponses,
      },
    },
    async (request, reply) => {
      await users.setPassword(request.params.id, request.body.Password, auditContext(request));
      return reply.code(204).send(null);
    },
  );

  for (const action of ['disable', 'enable'] as const)
    app.post(
      `/api/admin/users/:id/${action}`,
      {
        config: write,
        schema: {
          tags: TAGS,
          summary:
            action === 'disable'
              ? 'Disable a user: sign-in is refused, their sessions end and their grants are revoked at once'
              : 'Enable a disabled user',
          params: schemas.UserIdParams,
          response: schemas.UserResponses,
        },
      },
      async (request, reply) => {
        const by = auditContext(request);
        const user =
          action === 'disable' ? await users.disable(request.params.id, by) : await users.enable(request.params.id, by);
        return sendUser(request, reply, user);
      },
    );

  app.delete(
    '/api/admin/users/:id',
    {
      config: write,
      schema: {
        tags: TAGS,
        summary: 'Delete a user with their sessions, grants and tokens',
        params: schemas.UserIdParams,
        response: schemas.NoContentResponses,
      },
    },
    async (request, reply) => {
      await users.remove(request.params.id, auditContext(request));
      return reply.code(204).send(null);
    },
  );
}

function userUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/admin/users/${id}`;
}

/** A strong tag over everything the representation shows (RFC 9110 §8.8.3): any change makes a new one. */
function entityTag(user: User): string {
  const state = JSON.stringify([user.id, user.email, user.name, user.roles, user.disabledAt]);
  return `"u-${createHash('sha256').update(state).digest('base64url').slice(0, 22)}"`;
}

/** If-Match / If-Unmodified-Since… against the state read inside the update's transaction (412 otherwise). */
function checkPreconditions(request: FastifyRequest, user: User): void {
  const etag = entityTag(user);
  if (evaluatePreconditions(request.method, request.headers, { etag }) !== 'proceed')
    throw new Problem('preconditionFailed', `user ${user.id} has changed; fetch it again (current ETag ${etag})`, {
      headers: { etag },
    });
}

function sendUser(request: FastifyRequest, reply: FastifyReply, user: User) {
  reply.header('etag', entityTag(user)).header('cache-control', 'no-store');
  return userView(user, publicBaseUrl(request));
}

function userView(user: User, baseUrl: string) {
  return {
    Id: user.id,
    Email: user.email,
    Name: user.name,
    Roles: user.roles,
    Disabled: user.disabledAt !== null,
    DisabledAtUtc: user.disabledAt,
    CreatedAtUtc: user.createdAt,
    _links: { self: { href: userUrl(baseUrl, user.id), method: 'GET' } },
  };
}
