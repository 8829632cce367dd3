// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The integrator portal (docs/guides/portal.md, "Portal links"; docs/guides/admin-api.md, Clients): a client may have
// an owner, a Signet user who manages its webhooks; deleting the user leaves the client ownerless (SET NULL).
// A portal link is a one-time token, stored only as its SHA-256, scoped to one client.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function clientOwnersPortalLinksMigration(dialect: Dialect): Migration {
  const pg = dialect === 'postgres';
  const time = pg ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('oauth_clients')
        .addColumn('owner_id', pg ? 'uuid' : 'text', (c) => c.references('users.id').onDelete('set null'))
        .execute();
      await db.schema
        .createIndex('oauth_clients_owner')
        .on('oauth_clients')
        .columns(['owner_id', 'created_at'])
        .execute();
      await db.schema
        .createTable('webhook_portal_links')
        .addColumn('token_hash', 'text', (c) => c.primaryKey()) // hex SHA-256 of the token; the token is never stored
        // No foreign key: with an outside issuer the client is not in oauth_clients.
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .addColumn('used_at', time)
        .execute();
      await db.schema
        .createIndex('webhook_portal_links_expires')
        .on('webhook_portal_links')
        .column('expires_at')
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('webhook_portal_links').execute();
      await db.schema.dropIndex('oauth_clients_owner').execute();
      await db.schema.alterTable('oauth_clients').dropColumn('owner_id').execute();
    },
  };
}
