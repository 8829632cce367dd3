// FROZEN once shipped: shipped migrations never change; add a new file instead.
// Post-logout redirect URIs of a client (OpenID Connect RP-Initiated Logout 1.0 §3.1), registered with
// `signet client create --post-logout-redirect-uri`. Clients created before have none: an empty list,
// so their logout ends on Signet's own "signed out" page as it always did.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

export function postLogoutRedirectUrisMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('oauth_clients')
        .addColumn('post_logout_redirect_uris', 'text', (c) => c.notNull().defaultTo('[]')) // JSON array
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('oauth_clients').dropColumn('post_logout_redirect_uris').execute();
    },
  };
}
