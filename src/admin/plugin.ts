// The admin API (docs/guides/admin-api.md): a feature of the top layer, like the CLI. It calls the
// services the CLI uses (users, clients, keys, grants, webhook endpoints), never the tables directly, so
// the two cannot drift apart; every change it makes is recorded in the audit trail (src/audit/).
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.ts';
import type { DatabaseHandle } from '../db/database.ts';
import type { ProviderHolder } from '../auth-server/provider-holder.ts';
import { REGISTRATION_ROUTE } from '../auth-server/provider.ts';
import { userRoutes } from './users.routes.ts';
import { clientRoutes } from './clients.routes.ts';
import { auditRoutes } from './audit.routes.ts';
import { grantRoutes } from './grants.routes.ts';
import { keyRoutes } from './keys.routes.ts';
import { webhookAdminRoutes } from './webhooks.routes.ts';
import { deliveryAdminRoutes } from './deliveries.routes.ts';
import { eventAdminRoutes } from './events.routes.ts';
import { statsRoutes } from './stats.routes.ts';
import { meRoutes } from './me.routes.ts';

export interface AdminDependencies {
  config: Readonly<Config>;
  database: DatabaseHandle;
  /** The built-in authorization server, when enabled: grants, sessions and keys live there. */
  authServer: ProviderHolder | undefined;
  /** Every API scope (app.ts API_SCOPES): what a client may be registered for. */
  apiScopes?: readonly string[];
}

export async function registerAdmin(app: FastifyInstance, deps: AdminDependencies): Promise<void> {
  void app;
  void deps;
  await app.register(userRoutes, { db: deps.database.db });
  await app.register(clientRoutes, {
    db: deps.database.db,
    apiScopes: deps.apiScopes ?? [],
    registrationEndpoint: registrationEndpoint(deps),
  });
  await app.register(grantRoutes, { db: deps.database.db });
  await app.register(keyRoutes, { db: deps.database.db, config: deps.config, authServer: deps.authServer });
  await app.register(webhookAdminRoutes, { db: deps.database.db });
  // The outbox wakes the dispatchers after a redeliver or recover (registerWebhooks decorates it first).
  const log = { db: deps.database.db, outbox: app.webhooks.context.outbox };
  await app.register(deliveryAdminRoutes, log);
  await app.register(eventAdminRoutes, log);
  await app.register(auditRoutes, { db: deps.database.db });
  await app.register(statsRoutes, { db: deps.database.db, dialect: deps.database.dialect });
  await app.register(meRoutes, { db: deps.database.db });
}

/** RFC 7591's endpoint when dynamic registration is on (DYNAMIC_REGISTRATION and the built-in server). */
function registrationEndpoint(deps: AdminDependencies): string | undefined {
  if (!deps.authServer || !deps.config.dynamicRegistration) return undefined;
  return `${deps.config.oauthIssuer}${REGISTRATION_ROUTE}`;
}
