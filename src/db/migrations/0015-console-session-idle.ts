// FROZEN once shipped: shipped migrations never change; add a new file instead.
// The console's idle timeout (CONSOLE_IDLE_TIMEOUT_SECONDS, docs/security.md): when a session was last
// used, besides when it was created and when it ends at the latest. Null for the rows written before: they
// count as last used when they were created.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function consoleSessionIdleMigration(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('console_sessions').addColumn('last_seen_at', time).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('console_sessions').dropColumn('last_seen_at').execute();
    },
  };
}
