// The authorization server's part of the admin API (/api/admin/users, clients, registration tokens, grants,
// sessions, keys): HTTP over the services the CLI calls, so the two cannot drift apart. Composed with the
// other features' admin routes by src/operator/plugin.ts.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config/config.ts';
import type { Db } from '../../db/executor.ts';
import type { ProviderHolder } from '../provider/provider-holder.ts';
import { REGISTRATION_ROUTE } from '../provider/provider.ts';
import { registrationPolicyOf } from '../clients/registration-policy.ts';
import { clientRoutes } from './clients.routes.ts';
import { grantRoutes } from './grants.routes.ts';
import { keyRoutes } from './keys.routes.ts';
import { userRoutes } from './users.routes.ts';

interface AuthServerAdminOptions {
  config: Readonly<Config>;
  db: Db;
  /** The built-in authorization server, when enabled: grants, sessions and keys live there. */
  authServer: ProviderHolder | undefined;
  /** Every API scope (app.ts API_SCOPES): what a client may be registered for. */
  apiScopes: readonly string[];
  /** A user's roles, state or password changed: the API's live check of accounts forgets them (app.ts). */
  onUserChange?: (userId: string) => void;
  /** The scopes never given to a self-registered client (the admin scopes). */
  privilegedScopes: readonly string[];
}

export async function authServerAdminRoutes(app: FastifyInstance, options: AuthServerAdminOptions): Promise<void> {
  const { config, db, authServer, apiScopes } = options;
  await app.register(userRoutes, { db, onUserChange: options.onUserChange });
  await app.register(clientRoutes, {
    db,
    apiScopes,
    registrationEndpoint: registrationEndpoint(options),
    registrationPolicy: registrationPolicyOf(config, apiScopes, options.privilegedScopes),
  });
  await app.register(grantRoutes, { db });
  await app.register(keyRoutes, { db, config, authServer });
}

/** RFC 7591's endpoint when dynamic registration is on (DYNAMIC_REGISTRATION and the built-in server). */
function registrationEndpoint({ authServer, config }: AuthServerAdminOptions): string | undefined {
  if (!authServer || !config.dynamicRegistration) return undefined;
  return `${config.oauthIssuer}${REGISTRATION_ROUTE}`;
}
