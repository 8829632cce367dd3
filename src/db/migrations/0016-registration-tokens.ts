// FROZEN once shipped: shipped migrations never change; add a new file instead.
// Initial access tokens for dynamic client registration (RFC 7591 §3) get a table of their own, so they can
// be listed and revoked and carry a use count (docs/guides/admin-api.md, Registration tokens). Only the
// SHA-256 of the token is stored (`token_hash`); `id` is a public name for it (`rt_…`).
// The tokens issued before lived in oidc_payloads (model InitialAccessToken) with any number of uses and,
// possibly, admin scopes: they are deleted rather than carried over, so none keeps those powers; and the
// clients that registered themselves (a `client.registered` entry, or a registration access token) lose
// the admin scopes such a token could give them.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

/** The admin scopes when this migration was written (operator/admin.feature.ts then). */
const ADMIN_SCOPES = ['admin:read', 'admin:write'];

export function registrationTokensMigration(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('registration_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('scope', 'text', (c) => c.notNull()) // space-separated API scopes a registered client may have
        .addColumn('max_uses', 'integer', (c) => c.notNull())
        .addColumn('use_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('description', 'text')
        .addColumn('created_by', 'text', (c) => c.notNull()) // the audit actor, `type:id`
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .addColumn('revoked_at', time)
        .execute();
      await db.schema
        .createIndex('registration_tokens_created_at')
        .on('registration_tokens')
        .columns(['created_at', 'id'])
        .execute();
      await db.deleteFrom('oidc_payloads').where('model', '=', 'InitialAccessToken').execute();
      const registered = await db
        .selectFrom('audit_log')
        .select('target_id as id')
        .where('action', '=', 'client.registered')
        .union(db.selectFrom('oidc_payloads').select('client_id as id').where('model', '=', 'RegistrationAccessToken'))
        .execute();
      const ids = registered.map((row) => row.id as string | null).filter((id): id is string => Boolean(id));
      for (const id of ids) {
        const client = await db.selectFrom('oauth_clients').select('scopes').where('id', '=', id).executeTakeFirst();
        if (!client) continue;
        const scopes = (client.scopes as string).split(' ').filter((scope) => scope && !ADMIN_SCOPES.includes(scope));
        await db
          .updateTable('oauth_clients')
          .set({ scopes: scopes.join(' ') })
          .where('id', '=', id)
          .execute();
      }
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('registration_tokens').execute();
    },
  };
}
