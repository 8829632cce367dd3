// What the admin API brings to the shared layers when the app composes it (http/feature.ts): its section
// of the API description, its tags and its problem types; and its scopes, which the authorization server
// grants only to users holding the `admin` role (docs/security.md, "Roles").
import { CLIENT_PROBLEMS } from '../auth-server/clients/clients.service.ts';
import { USER_PROBLEMS } from '../auth-server/identity/users.service.ts';
import type { FeatureContribution } from '../http/feature.ts';

/** The scopes the admin routes require → the words the consent page shows (collected in app.ts). */
export const ADMIN_SCOPES: Readonly<Record<string, string>> = {
  'admin:read': 'Read Signet’s configuration: clients, users, sessions, keys, webhooks and the audit trail',
  'admin:write': 'Change Signet’s configuration: clients, users, sessions, keys and webhooks',
};

/** The role a user must hold for a token carrying the admin scopes. */
export const ADMIN_ROLE = 'admin';

const ADMIN_DESCRIPTION = `## Administration

\`/api/admin/…\` operates Signet over HTTP: clients, users, grants and sessions, signing keys, webhook
endpoints across all clients, and the audit trail. \`admin:read\` reads, \`admin:write\` changes; the
authorization server grants them only to users with the \`admin\` role, or to confidential clients
registered for them.`;

export const ADMIN_FEATURE: FeatureContribution = {
  problemTypes: { ...USER_PROBLEMS, ...CLIENT_PROBLEMS },
  openApi: { description: ADMIN_DESCRIPTION, tags: ['admin'] },
};
