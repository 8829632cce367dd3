// FROZEN once shipped: shipped migrations never change; add a new file instead.
// Customer-scoped portals (docs/guides/portal.md, "Customer portals"): a portal link may name one of its
// client's customers; the session it opens and the endpoints made in it belong to that customer.
// - webhook_endpoints.customer_id: null for the client's own endpoints, else the customer's (lower-case GUID);
// - webhook_portal_links: a public id (`pl_…`, for listing and revoking), the customer, and revoked_at;
// - console_portal_sessions: a public id (`ps_…`), the link it was opened with, and the customer.
// Rows written before this migration get random ids (links and sessions live an hour at most).
import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function portalCustomersMigration(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  const randomId = (prefix: string, seed: string) =>
    dialect === 'postgres'
      ? sql.raw(`'${prefix}' || md5(random()::text || clock_timestamp()::text || ${seed})`)
      : sql.raw(`'${prefix}' || lower(hex(randomblob(16)))`);
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('webhook_endpoints').addColumn('customer_id', 'text').execute();
      await db.schema
        .createIndex('webhook_endpoints_owner_customer_idx')
        .on('webhook_endpoints')
        .columns(['owner', 'customer_id'])
        .execute();

      await db.schema.alterTable('webhook_portal_links').addColumn('id', 'text').execute();
      await db.schema.alterTable('webhook_portal_links').addColumn('customer_id', 'text').execute();
      await db.schema.alterTable('webhook_portal_links').addColumn('revoked_at', time).execute();
      await db
        .updateTable('webhook_portal_links')
        .set({ id: randomId('pl_', 'token_hash') })
        .execute();
      await db.schema.createIndex('webhook_portal_links_id').unique().on('webhook_portal_links').column('id').execute();
      await db.schema
        .createIndex('webhook_portal_links_client_created')
        .on('webhook_portal_links')
        .columns(['client_id', 'created_at'])
        .execute();

      await db.schema.alterTable('console_portal_sessions').addColumn('id', 'text').execute();
      await db.schema.alterTable('console_portal_sessions').addColumn('link_id', 'text').execute();
      await db.schema.alterTable('console_portal_sessions').addColumn('customer_id', 'text').execute();
      await db
        .updateTable('console_portal_sessions')
        .set({ id: randomId('ps_', 'id_hash') })
        .execute();
      await db.schema
        .createIndex('console_portal_sessions_id')
        .unique()
        .on('console_portal_sessions')
        .column('id')
        .execute();
      await db.schema
        .createIndex('console_portal_sessions_link_id')
        .on('console_portal_sessions')
        .column('link_id')
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('console_portal_sessions_link_id').execute();
      await db.schema.dropIndex('console_portal_sessions_id').execute();
      for (const column of ['customer_id', 'link_id', 'id'])
        await db.schema.alterTable('console_portal_sessions').dropColumn(column).execute();
      await db.schema.dropIndex('webhook_portal_links_client_created').execute();
      await db.schema.dropIndex('webhook_portal_links_id').execute();
      for (const column of ['revoked_at', 'customer_id', 'id'])
        await db.schema.alterTable('webhook_portal_links').dropColumn(column).execute();
      await db.schema.dropIndex('webhook_endpoints_owner_customer_idx').execute();
      await db.schema.alterTable('webhook_endpoints').dropColumn('customer_id').execute();
    },
  };
}
