// FROZEN once shipped: shipped migrations never change; add a new file instead.
// Clients registered as resource servers (`signet client create --resource-server`): confidential
// clients that may introspect every access token, not only their own (RFC 7662 §2.1;
// docs/guides/signing-in-users.md, Introspection). Clients created before are not: 0.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

export function resourceServerClientsMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('oauth_clients')
        .addColumn('resource_server', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('oauth_clients').dropColumn('resource_server').execute();
    },
  };
}
