// The admin API (/api/admin/…, docs/guides/admin-api.md): composed here from each feature's admin routes
// (auth-server/admin/, webhooks/admin/, audit/admin/) and what spans features (the overview, /api/me). Like the
// CLI it calls the features' services, never their tables; every change is recorded in the audit trail.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.ts';
import type { DatabaseHandle } from '../db/database.ts';
import type { ProviderHolder } from '../auth-server/provider/provider-holder.ts';
import { authServerAdminRoutes } from '../auth-server/admin/plugin.ts';
import { auditRoutes } from '../audit/admin/audit.routes.ts';
import { webhooksAdminRoutes } from '../webhooks/admin/plugin.ts';
import { statsRoutes } from './stats.routes.ts';
import { meRoutes } from './me.routes.ts';
import { recordDeniedAdminRequests } from './denied-requests.ts';
import { ADMIN_SCOPES } from './admin.feature.ts';

interface AdminDependencies {
  config: Readonly<Config>;
  database: DatabaseHandle;
  /** The built-in authorization server, when enabled: grants, sessions and keys live there. */
  authServer: ProviderHolder | undefined;
  /** Every API scope (app.ts API_SCOPES): what a client may be registered for. */
  apiScopes?: readonly string[];
  /** A user's roles, state or password changed: the API's live check of accounts forgets them (app.ts). */
  onUserChange?: (userId: string) => void;
}

/** Each feature's admin routes, then what spans features: the overview and the caller's own clients. */
export async function registerAdmin(app: FastifyInstance, deps: AdminDependencies): Promise<void> {
  const { db, dialect } = deps.database;
  // First, so that its hook covers every admin route registered after it (the console's included).
  recordDeniedAdminRequests(app, { db });
  await app.register(authServerAdminRoutes, {
    config: deps.config,
    db,
    authServer: deps.authServer,
    apiScopes: deps.apiScopes ?? [],
    onUserChange: deps.onUserChange,
    // Never given to a self-registered client, nor allowed by a registration token (registration-policy.ts).
    privilegedScopes: Object.keys(ADMIN_SCOPES),
  });
  // registerWebhooks decorates the app with its context (outbox, secret box, URL rules) before the admin API is registered.
  await app.register(webhooksAdminRoutes, { db, context: app.webhooks.context });
  await app.register(auditRoutes, { db });
  await app.register(statsRoutes, { db, dialect });
  await app.register(meRoutes, { db });
}
