// The authorization server inside the Fastify app: oidc-provider mounted under the issuer's path
// (mount.ts), our login/consent pages beside it, RFC 8414 metadata, the key reloads (key-reloader.ts) and
// the timer that purges expired rows.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { purgeStaleThrottles } from './identity/login-throttle.ts';
import { interactionRoutes } from './interactions/interactions.routes.ts';
import { fastifyRequestOf, mountMiddleware } from './provider/mount.ts';
import { ensureKeys, signingAlgorithms } from './tokens/keys.ts';
import { purgeExpiredPayloads } from './provider/oidc-adapter.ts';
import { startKeyReloads } from './provider/key-reloader.ts';
import { ProviderHolder } from './provider/provider-holder.ts';
import type { ProviderSettings } from './provider/provider.ts';
import { TokenCounter } from './tokens/token-stats.ts';

interface AuthServerOptions extends ProviderSettings {
  db: Kysely<Database>;
  keyEncryptionKey: Buffer | undefined;
  loginMaxFailures: number;
  /** PostgreSQL: the database whose rotation notifications this instance listens to; undefined on SQLite. */
  keyNotificationsUrl: string | undefined;
  /** KEY_RELOAD_INTERVAL: the poll behind the notifications. */
  keyReloadIntervalMs: number;
  /** The resource API's scopes → the words the consent page shows (declared by the features). */
  scopeDescriptions: Readonly<Record<string, string>>;
}

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export async function registerAuthServer(app: FastifyInstance, options: AuthServerOptions): Promise<ProviderHolder> {
  const { db } = options;
  await ensureKeys(db, signingAlgorithms(options.accessTokenAlg), options.keyEncryptionKey);
  const holder = await ProviderHolder.create(db, options, options.keyEncryptionKey, app.log);
  const issuer = new URL(options.issuer);
  const mount = issuer.pathname.replace(/\/$/, '');
  const isInteraction = (url: string): boolean => url.startsWith(`${mount}/interaction/`);

  // Every request oidc-provider sees passes through this handler, however its path is spelled (the
  // mount matches case-insensitively and percent-decoded, and so does oidc-provider's router).
  mountMiddleware(app, mount, (req, res, next) => {
    if (isInteraction(`${mount}${req.url ?? ''}`)) return next();
    pinToIssuerOrigin(req, issuer, fastifyRequestOf(req)?.clientOrigin.ip);
    // Fastify's reply headers never reach a response written by the middleware: set the id here.
    const requestId = (req as IncomingMessage & { id?: string }).id;
    if (requestId) res.setHeader('x-request-id', requestId);
    holder.handler(req, res);
  });
  await app.register(interactionRoutes, {
    prefix: mount,
    holder,
    db,
    loginMaxFailures: options.loginMaxFailures,
    basePath: mount,
    scopeDescriptions: options.scopeDescriptions,
    scopeRoles: options.scopeRoles,
  });
  registerAuthorizationServerMetadata(app, mount);

  const reloads = startKeyReloads(holder, {
    listenUrl: options.keyNotificationsUrl,
    log: app.log,
    pollMs: options.keyReloadIntervalMs,
  });
  const purge = setInterval(() => {
    Promise.all([purgeExpiredPayloads(db, new Date()), purgeStaleThrottles(db)]).catch((err: unknown) =>
      app.log.warn({ err }, 'authorization server purge failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();
  app.addHook('onClose', async () => {
    clearInterval(purge);
    await reloads.close();
  });
  countTokens(app, holder, db);
  return holder;
}

/**
 * Tokens per hour for GET /api/admin/stats: counted in memory, written every few seconds and when the app
 * closes. onClose hooks run last-registered first, so app.ts's, which closes the database, runs before any
 * of ours: the counts are written at preClose (new requests are refused by then), and once more at onClose
 * in case requests still in flight issued tokens (then only if the database is still open).
 */
function countTokens(app: FastifyInstance, holder: ProviderHolder, db: Kysely<Database>): void {
  const counter = new TokenCounter(db, (err) => app.log.warn({ err }, 'token counts not written yet'));
  holder.observeTokens((grantType) => counter.record(grantType));
  const lost = (err: unknown) => app.log.error({ err }, 'token counts lost at shutdown');
  app.addHook('preClose', async () => counter.flush().catch(lost));
  app.addHook('onClose', async () => counter.close().catch(lost));
}

/**
 * oidc-provider builds URLs from the request (koa, proxy mode): make every request look as if it
 * arrived at the issuer's origin, so URLs always agree with `iss` (OIDC Discovery §3, RFC 8414 §2) and
 * a forged Host or X-Forwarded-Host changes nothing.
 */
function pinToIssuerOrigin(req: IncomingMessage, issuer: URL, clientIp: string | undefined): void {
  req.headers['x-forwarded-host'] = issuer.host;
  req.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
  if (clientIp) req.headers['x-forwarded-for'] = clientIp;
  else delete req.headers['x-forwarded-for'];
}

/** RFC 8414 §3.1: `/.well-known/oauth-authorization-server` inserted before the issuer's path. */
function registerAuthorizationServerMetadata(app: FastifyInstance, mount: string): void {
  app.get(`/.well-known/oauth-authorization-server${mount}`, { schema: { hide: true } }, async (_request, reply) => {
    const response = await app.inject({ method: 'GET', url: `${mount}/.well-known/openid-configuration` });
    return reply
      .code(response.statusCode)
      .header('content-type', 'application/json; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .send(response.body);
  });
}
