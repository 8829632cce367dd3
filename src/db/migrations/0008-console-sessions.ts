// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The console's server-side sessions (docs/guides/portal.md): the backend-for-frontend keeps the user's
// tokens here, sealed (AES-256-GCM), and the browser holds only an opaque cookie whose SHA-256 is the key.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function consoleSessionsMigration(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('console_sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey()) // SHA-256 of the cookie value, base64url
        .addColumn('user_id', 'text', (c) => c.notNull()) // the `sub`
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull()) // the access token's granted scopes
        .addColumn('tokens', 'text', (c) => c.notNull()) // sealed JSON: access, refresh and ID token
        .addColumn('access_expires_at', time, (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('console_sessions_expires_at').on('console_sessions').column('expires_at').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('console_sessions').execute();
    },
  };
}
