// FROZEN: shipped migrations never change; add a new file instead.
// The authorization server: users, clients, oidc-provider's stored models, signing keys, login throttling.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function authServerMigration(dialect: Dialect): Migration {
  const pg = dialect === 'postgres';
  const time = pg ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('users')
        .addColumn('id', pg ? 'uuid' : 'text', (c) => c.primaryKey()) // the OIDC `sub` and the orders' CustomerId
        .addColumn('email', 'text', (c) => c.notNull()) // stored lower-cased
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text', (c) => c.notNull()) // PHC string, argon2id
        .addColumn('created_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('users_email_key').unique().on('users').column('email').execute();

      await db.schema
        .createTable('oauth_clients')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull()) // confidential | public
        .addColumn('secret_hash', 'text') // SHA-256 of a 256-bit random secret; null for public clients
        .addColumn('grant_types', 'text', (c) => c.notNull()) // space-separated
        .addColumn('redirect_uris', 'text', (c) => c.notNull()) // JSON array
        .addColumn('scopes', 'text', (c) => c.notNull()) // space-separated
        .addColumn('cors_origins', 'text', (c) => c.notNull()) // JSON array
        .addColumn('first_party', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('secret_rotated_at', time)
        .execute();

      // Every model oidc-provider persists (sessions, interactions, grants, codes, refresh tokens …).
      await db.schema
        .createTable('oidc_payloads')
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('grant_id', 'text')
        .addColumn('client_id', 'text')
        .addColumn('account_id', 'text')
        .addColumn('user_code', 'text')
        .addColumn('uid', 'text')
        .addColumn('expires_at', time)
        .addColumn('consumed_at', time)
        .addPrimaryKeyConstraint('oidc_payloads_pk', ['model', 'id'])
        .execute();
      await db.schema.createIndex('oidc_payloads_grant_idx').on('oidc_payloads').column('grant_id').execute();
      await db.schema.createIndex('oidc_payloads_client_idx').on('oidc_payloads').column('client_id').execute();
      await db.schema.createIndex('oidc_payloads_account_idx').on('oidc_payloads').column('account_id').execute();
      await db.schema.createIndex('oidc_payloads_uid_idx').on('oidc_payloads').columns(['model', 'uid']).execute();
      await db.schema
        .createIndex('oidc_payloads_user_code_idx')
        .on('oidc_payloads')
        .columns(['model', 'user_code'])
        .execute();
      await db.schema.createIndex('oidc_payloads_expires_idx').on('oidc_payloads').column('expires_at').execute();

      // Private JWKs for signing and secrets for cookie signing. retired_at: still published, no longer used.
      await db.schema
        .createTable('signing_keys')
        .addColumn('kid', 'text', (c) => c.primaryKey())
        .addColumn('use', 'text', (c) => c.notNull()) // jws | cookie
        .addColumn('alg', 'text', (c) => c.notNull())
        .addColumn('material', 'text', (c) => c.notNull()) // private JWK (JSON) or base64url secret
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('retired_at', time)
        .execute();

      await db.schema
        .createTable('login_throttle')
        .addColumn('key', 'text', (c) => c.primaryKey()) // "account:<email>" or "address:<ip>"
        .addColumn('failures', 'integer', (c) => c.notNull())
        .addColumn('blocked_until', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<any>) {
      for (const table of ['login_throttle', 'signing_keys', 'oidc_payloads', 'oauth_clients', 'users'])
        await db.schema.dropTable(table).execute();
    },
  };
}
