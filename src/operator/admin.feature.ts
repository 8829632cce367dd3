// What the admin API brings to the shared layers when the app composes it (http/feature.ts): its section
// of the API description, its tags and its problem types; and its scopes, which the authorization server
// grants only to users holding a role that allows them (docs/security.md, "Roles").
import { CLIENT_PROBLEMS } from '../auth-server/clients/clients.service.ts';
import { USER_PROBLEMS } from '../auth-server/identity/users.service.ts';
import type { FeatureContribution } from '../http/feature.ts';

/** The scopes the admin routes require → the words the consent page shows (collected in app.ts). */
export const ADMIN_SCOPES: Readonly<Record<string, string>> = {
  'admin:read': 'Read Signet’s configuration: clients, users, sessions, keys, webhooks and the audit trail',
  'admin:write': 'Change Signet’s configuration: clients, users, sessions, keys and webhooks',
};

/** The role whose tokens may carry both admin scopes: reads and changes. */
export const ADMIN_ROLE = 'admin';
/** A read-only operator: reads everything an admin reads (admin:read), changes nothing. */
export const AUDITOR_ROLE = 'auditor';

/** scope → the roles that allow it on a user's token (auth-server/identity/roles.ts). */
export const ADMIN_SCOPE_ROLES: Readonly<Record<string, readonly string[]>> = {
  'admin:read': [ADMIN_ROLE, AUDITOR_ROLE],
  'admin:write': [ADMIN_ROLE],
};

const ADMIN_DESCRIPTION = `## Administration

\`/api/admin/…\` operates Signet over HTTP: clients, users, grants and sessions, signing keys, webhook
endpoints across all clients, and the audit trail. \`admin:read\` reads, \`admin:write\` changes; the
authorization server grants \`admin:read\` to users with the \`admin\` or \`auditor\` role, \`admin:write\`
to users with the \`admin\` role, and both to confidential clients registered for them. A user's roles
and disabled state are checked again on every request (cached for a few seconds at most): a role taken
away or a disabled account stops the token already issued.`;

export const ADMIN_FEATURE: FeatureContribution = {
  problemTypes: { ...USER_PROBLEMS, ...CLIENT_PROBLEMS },
  openApi: { description: ADMIN_DESCRIPTION, tags: ['admin'] },
};
