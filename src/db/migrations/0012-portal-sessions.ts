// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The integrator portal's sessions (docs/guides/portal.md, Integrator portal): a browser acting as ONE client on
// the webhook and event API, opened by a portal link or by the client's owner. Keyed by the SHA-256 of the
// cookie value like console_sessions; the client's access token is sealed (AES-256-GCM) in `token`.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function portalSessionsMigration(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('console_portal_sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey()) // SHA-256 of the cookie value, base64url
        .addColumn('client_id', 'text', (c) => c.notNull()) // no foreign key: the token carries the client
        .addColumn('client_name', 'text', (c) => c.notNull())
        .addColumn('via', 'text', (c) => c.notNull()) // 'link' or 'owner'
        // An owner's portal lives inside their console session and ends with it; null for a link.
        .addColumn('console_session_hash', 'text')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('token', 'text', (c) => c.notNull()) // sealed access token
        .addColumn('access_expires_at', time, (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('console_portal_sessions_expires_at')
        .on('console_portal_sessions')
        .column('expires_at')
        .execute();
      // Sign-out ends the owner's portals by their console session (deletePortalSessionsOf); a client's
      // deletion or owner change ends its portals by client (deletePortalSessionsOfClient).
      await db.schema
        .createIndex('console_portal_sessions_console_session_hash')
        .on('console_portal_sessions')
        .column('console_session_hash')
        .execute();
      await db.schema
        .createIndex('console_portal_sessions_client_id')
        .on('console_portal_sessions')
        .column('client_id')
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('console_portal_sessions').execute();
    },
  };
}
