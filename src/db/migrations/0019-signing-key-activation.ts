// FROZEN once shipped: shipped migrations never change; add a new file instead.
// A rotated key is published before it signs (docs/operations/scaling-out.md, "Rotating signing keys"):
// `activates_at` is when it starts signing, after every instance has had time to load it and publish it;
// until then the key it replaces keeps signing (its `retired_at` is the same instant). Null for the rows
// written before: they sign from their creation, as they did.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../executor.ts';

export function signingKeyActivationMigration(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('signing_keys').addColumn('activates_at', time).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('signing_keys').dropColumn('activates_at').execute();
    },
  };
}
