// /api/admin/keys (docs/guides/admin-api.md, Signing keys): the stored keys, never their material, and the
// rotation `signet keys rotate` runs (src/auth-server/tokens/keys.ts rotateKeys, one function for both). The
// new keys are published at once and sign after KEY_ROTATION_DELAY: this instance reloads now, the others on
// the rotation's NOTIFY (PostgreSQL) or their poll (src/auth-server/provider/key-reloader.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { listKeys, rotateKeys, signingAlgorithms, type KeyInfo } from '../tokens/keys.ts';
import type { ProviderHolder } from '../provider/provider-holder.ts';
import type { Config } from '../../config/config.ts';
import type { Db } from '../../db/executor.ts';
import { Problem } from '../../http/problems/problems.ts';
import { auditContext } from '../../http/admin/context.ts';
import * as schemas from './keys.schemas.ts';

interface KeyRouteOptions {
  db: Db;
  config: Readonly<Config>;
  authServer: ProviderHolder | undefined;
}

const TAGS = ['admin'];

function keyView(key: KeyInfo) {
  return {
    Kid: key.kid,
    Alg: key.alg,
    Use: key.use,
    State: key.state,
    CreatedAtUtc: key.createdAt.toISOString(),
    ActivatesAtUtc: key.activatesAt.toISOString(),
    RetiredAtUtc: key.retiredAt && key.retiredAt.toISOString(),
  };
}

export async function keyRoutes(fastify: FastifyInstance, options: KeyRouteOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, config } = options;

  /** An external issuer signs its own tokens: there is nothing here to list or rotate. */
  function holder(): ProviderHolder {
    if (!options.authServer)
      throw new Problem('notFound', 'this instance runs no built-in authorization server, so it holds no signing keys');
    return options.authServer;
  }

  app.get(
    '/api/admin/keys',
    {
      config: { scope: 'admin:read' },
      schema: {
        tags: TAGS,
        summary: 'The signing keys: signing first, then pending ones, then retired ones still published',
        response: schemas.KeyListResponses,
      },
    },
    async (_request, reply) => {
      holder();
      reply.header('cache-control', 'no-store');
      return { Items: (await listKeys(db)).map(keyView) };
    },
  );

  app.post(
    '/api/admin/keys/rotate',
    {
      config: { scope: 'admin:write' },
      schema: {
        tags: TAGS,
        summary:
          'Rotate the signing keys: new ones published now, signing after KEY_ROTATION_DELAY; old ones published until their tokens expire',
        response: schemas.RotateResponses,
      },
    },
    async (request, reply) => {
      const authServer = holder();
      const { kids, activatesAt } = await rotateKeys(
        db,
        signingAlgorithms(config.accessTokenAlg),
        config.keyEncryptionKey,
        auditContext(request),
        { delayMs: config.keyRotationDelayMs },
      );
      // This instance publishes the new keys from the next request on, and signs with them at activatesAt.
      await authServer.reloadIfChanged();
      reply.header('cache-control', 'no-store');
      return { Kids: kids, ActivatesAtUtc: activatesAt.toISOString(), Items: (await listKeys(db)).map(keyView) };
    },
  );
}
