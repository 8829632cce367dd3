// The authorization server inside the Fastify app: oidc-provider mounted under the issuer's path with
// @fastify/middie (at the root it would swallow every other route), our login/consent pages beside it,
// RFC 8414 metadata, and the timers that reload rotated keys and purge expired rows.
import middie from '@fastify/middie';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { purgeStaleThrottles } from './login-throttle.ts';
import { interactionRoutes } from './interactions.routes.ts';
import { ensureKeys, signingAlgorithms } from './keys.ts';
import { purgeExpiredPayloads } from './oidc-adapter.ts';
import { KEY_CHECK_INTERVAL_MS, ProviderHolder } from './provider-holder.ts';
import type { ProviderSettings } from './provider.ts';

export interface AuthServerOptions extends ProviderSettings {
  db: Kysely<Database>;
  keyEncryptionKey: Buffer | undefined;
  loginMaxFailures: number;
}

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export async function registerAuthServer(app: FastifyInstance, options: AuthServerOptions): Promise<ProviderHolder> {
  const { db } = options;
  await ensureKeys(db, signingAlgorithms(options.accessTokenAlg), options.keyEncryptionKey);
  const holder = await ProviderHolder.create(db, options, options.keyEncryptionKey);
  const issuer = new URL(options.issuer);
  const mount = issuer.pathname.replace(/\/$/, '');
  const isInteraction = (url: string): boolean => url.startsWith(`${mount}/interaction/`);

  // oidc-provider builds URLs from the request (koa, proxy mode): make every request look as if it
  // arrived at the issuer's origin, so URLs always agree with `iss` and a forged Host changes nothing.
  app.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
    if (request.url.startsWith(`${mount}/`) && !isInteraction(request.url)) {
      const headers = request.raw.headers;
      headers['x-forwarded-host'] = issuer.host;
      headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
      headers['x-forwarded-for'] = request.clientOrigin.ip;
    }
    done();
  });
  await app.register(middie, { hook: 'onRequest' });
  app.use(mount, (req, res, next) => {
    if (isInteraction(`${mount}${req.url ?? ''}`)) return next();
    holder.handler(req, res);
  });
  await app.register(interactionRoutes, { prefix: mount, holder, db, loginMaxFailures: options.loginMaxFailures, basePath: mount });
  registerAuthorizationServerMetadata(app, mount);

  const timers = [
    setInterval(() => {
      holder.reloadIfChanged().then(
        (changed) => changed && app.log.info('signing keys changed; authorization server reloaded'),
        (err: unknown) => app.log.warn({ err }, 'signing key reload failed'),
      );
    }, KEY_CHECK_INTERVAL_MS),
    setInterval(() => {
      Promise.all([purgeExpiredPayloads(db, new Date()), purgeStaleThrottles(db)]).catch((err: unknown) => app.log.warn({ err }, 'authorization server purge failed'));
    }, PURGE_INTERVAL_MS),
  ];
  for (const timer of timers) timer.unref();
  app.addHook('onClose', async () => {
    for (const timer of timers) clearInterval(timer);
  });
  return holder;
}

/** RFC 8414 §3.1: `/.well-known/oauth-authorization-server` inserted before the issuer's path. */
function registerAuthorizationServerMetadata(app: FastifyInstance, mount: string): void {
  app.get(`/.well-known/oauth-authorization-server${mount}`, { schema: { hide: true } }, async (_request, reply) => {
    const response = await app.inject({ method: 'GET', url: `${mount}/.well-known/openid-configuration` });
    return reply.code(response.statusCode).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'public, max-age=300').send(response.body);
  });
}
