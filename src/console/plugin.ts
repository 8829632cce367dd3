// The Signet console (docs/guides/portal.md): a Preact app without a build step, served from memory, and its
// backend-for-frontend (sign-in, session, the /console/api proxy). It calls only the public HTTP APIs
// (/api/*, /oauth/*) in process; its one private step is registering its own OAuth client at start.
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/config.ts';
import type { DatabaseHandle, Db } from '../db/database.ts';
import { sendEncoded } from '../http/representation/encodings.ts';
import { Problem } from '../http/problems/problems.ts';
import { resolveSecretKey } from '../webhooks/store/secrets.ts';
import { loadAssets, type Asset } from './assets.ts';
import { authRoutes } from './auth.routes.ts';
import { consoleClient, ensureConsoleClient } from './client.ts';
import { cookieSettings, type ConsoleContext } from './context.ts';
import { proxyRoutes } from './proxy.routes.ts';
import { portalRoutes } from './portal.routes.ts';
import { createPortalStore, portalTokens, type PortalStore } from './portal-sessions.ts';
import { sessionTokens } from './session-tokens.ts';
import { deleteExpiredPortalSessions } from './portal-sessions.repository.ts';
import { snippetRoutes } from './snippets.routes.ts';
import { portalAdminRoutes } from './portal-admin.routes.ts';
import { endPortalsOfClient } from './portal-revocation.ts';
import { consoleKey, createSessionStore } from './sessions.ts';
import { deleteExpiredSessions } from './sessions.repository.ts';

/** Scripts and styles from 'self' only: no inline code, no eval, nothing from another origin. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

const PURGE_INTERVAL_MS = 60 * 60 * 1000;

interface ConsoleDependencies {
  config: Readonly<Config>;
  database: DatabaseHandle;
  /** The scopes the console asks for: OpenID's and those of the APIs it calls (admin, webhooks). */
  scopes: readonly string[];
}

export async function registerConsole(app: FastifyInstance, deps: ConsoleDependencies): Promise<void> {
  const { config, database } = deps;
  const issuer = new URL(config.oauthIssuer);
  const origin = issuer.origin;
  const apiScopes = deps.scopes.filter((s) => !['openid', 'profile', 'email'].includes(s));
  await ensureConsoleClient(
    database.db,
    consoleClient(origin, [...new Set(['openid', 'profile', 'email', ...apiScopes])]),
  );
  const key = consoleKey(resolveSecretKey(config.webhookSecretKey, config.databaseUrl));
  // registerConsole runs only with the built-in authorization server (app.ts): it mints the portal's tokens.
  const tokens = portalTokens(app.authServer!);
  const ctx: ConsoleContext = {
    store: createSessionStore({
      db: database.db,
      key,
      lifetimeSeconds: config.refreshTokenTtlSeconds,
      idleTimeoutSeconds: config.consoleIdleTimeoutSeconds,
    }),
    idleTimeoutSeconds: config.consoleIdleTimeoutSeconds,
    oauth: { issuerPath: issuer.pathname.replace(/\/$/, ''), host: issuer.host },
    origin,
    scopes: deps.scopes,
    cookies: cookieSettings(origin),
    portals: createPortalStore({ db: database.db, key, tokens }),
    tokens,
  };
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console', 302));
  endPortalsOnClientChange(app, ctx.portals, database.db);
  await app.register(portalAdminRoutes, { db: database.db, portals: ctx.portals });
  await app.register(async (scope) => consoleScope(scope, ctx, database.db));
  const purge = setInterval(() => {
    const now = new Date();
    const idleSince = new Date(now.getTime() - config.consoleIdleTimeoutSeconds * 1000);
    deleteExpiredSessions(database.db, now, idleSince).catch((err) =>
      app.log.warn({ err }, 'console session purge failed'),
    );
    deleteExpiredPortalSessions(database.db, new Date()).catch((err) =>
      app.log.warn({ err }, 'portal session purge failed'),
    );
  }, PURGE_INTERVAL_MS).unref();
  app.addHook('onClose', async () => clearInterval(purge));
}

/** Everything under /console, in its own encapsulated scope: its CSP, cookies and body parsing stay here. */
async function consoleScope(app: FastifyInstance, ctx: ConsoleContext, db: Db): Promise<void> {
  await app.register(cookie);
  // After security-headers.ts's hook (registered on the root), so this CSP replaces the API's.
  // Referrer-Policy same-origin, not the API's no-referrer: under no-referrer a browser sends `Origin: null`
  // on same-origin POSTs (Fetch §3.2.5), and the console checks Origin against CSRF (auth.routes.ts).
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('content-security-policy', CONSOLE_CSP).header('referrer-policy', 'same-origin');
  });
  // Bodies reach the proxy as bytes, forwarded as sent; the /api route parses and validates them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  registerAssets(app);
  snippetRoutes(app); // GET /console/snippets.json, for the portal's Verify deliveries page
  await authRoutes(app, ctx);
  const tokens = sessionTokens(app, ctx);
  await proxyRoutes(app, ctx, tokens);
  await portalRoutes(app, ctx, db, tokens);
}

const CLIENT_ROUTE = '/api/admin/clients/:client_id';
const CLIENT_SECRET_ROUTE = '/api/admin/clients/:client_id/rotate-secret';

/**
 * A client's portals and unused links end with the client (DELETE) or its secret (rotate-secret), its owners'
 * portals with an owner change (PATCH naming `owner`): the console watches the admin API's answers rather than the
 * admin API knowing the console (eslint layerRules: admin/ is composed by app.ts, the console sits on top).
 * onSend runs before the answer leaves, so the next request already finds the portals gone. The CLI ends them
 * itself (cli/clients.ts); an owner change made there is caught when the portal's token is minted again: the
 * owner is asked again (portal.ts).
 */
function endPortalsOnClientChange(app: FastifyInstance, portals: PortalStore, db: Db): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.url;
    if ((route !== CLIENT_ROUTE && route !== CLIENT_SECRET_ROUTE) || reply.statusCode >= 300) return payload;
    const clientId = (request.params as { client_id: string }).client_id;
    if (request.method === 'DELETE' || route === CLIENT_SECRET_ROUTE)
      await endPortalsOfClient(db, clientId, new Date());
    const body = request.body as { owner?: unknown } | undefined;
    if (request.method === 'PATCH' && body !== null && typeof body === 'object' && 'owner' in body)
      await portals.removeOfClient(clientId, 'owner');
    return payload;
  });
}

/** The asset in the coding the browser accepts (gzip, brotli or none), or 304 (http/representation/encodings.ts). */
function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  return sendEncoded(request, reply, asset.encoded, asset);
}

function registerAssets(app: FastifyInstance): void {
  const assets = loadAssets();
  const shell = assets.get('/console/assets/index.html')!;
  const find = (url: string) => assets.get(url.split('?')[0]!);
  for (const prefix of ['/console/assets/*', '/console/vendor/*'])
    app.get(prefix, { schema: { hide: true } }, async (request, reply) => {
      const asset = find(request.url);
      if (!asset) throw new Problem('notFound', `no console file ${request.url.split('?')[0]}`);
      return sendAsset(request, reply, asset);
    });
  // Every page path of the app gets the same shell; the app's router (assets/app.js) shows the page.
  const page = async (request: FastifyRequest, reply: FastifyReply) => sendAsset(request, reply, shell);
  app.get('/console', { schema: { hide: true } }, page);
  app.get('/console/*', { schema: { hide: true } }, page);
}
