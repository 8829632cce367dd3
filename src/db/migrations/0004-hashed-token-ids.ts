// FROZEN: shipped migrations never change; add a new file instead.
// Authorization codes and opaque tokens are stored under the SHA-256 of their value, without the value
// in the payload (`jti`), from this version on (src/auth-server/provider/oidc-adapter.ts). Rows stored before
// are rehashed in place; expired ones are deleted instead. One way only: the values are gone, so code
// from before this migration no longer finds them, and their holders sign in again.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

const MODELS = ['AuthorizationCode', 'RefreshToken', 'AccessToken', 'ClientCredentials'];
const BATCH = 500;

export function hashedTokenIdsMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db
        .deleteFrom('oidc_payloads')
        .where('model', 'in', MODELS)
        .where('expires_at', '<', new Date().toISOString())
        .execute();
      // Keyset pages over (model, id). A rehashed row can sort after the page it came from and be read
      // again: it no longer has a `jti`, which is also what makes a rerun after a failure safe.
      let last = { model: '', id: '' };
      for (;;) {
        const rows: { model: string; id: string; payload: string }[] = await db
          .selectFrom('oidc_payloads')
          .select(['model', 'id', 'payload'])
          .where('model', 'in', MODELS)
          .where((eb) =>
            eb.or([eb('model', '>', last.model), eb.and([eb('model', '=', last.model), eb('id', '>', last.id)])]),
          )
          .orderBy('model')
          .orderBy('id')
          .limit(BATCH)
          .execute();
        if (rows.length === 0) return;
        for (const row of rows) {
          const { jti, ...payload } = JSON.parse(row.payload) as Record<string, unknown>;
          if (jti === undefined) continue;
          await db
            .updateTable('oidc_payloads')
            .set({ id: createHash('sha256').update(row.id).digest('base64url'), payload: JSON.stringify(payload) })
            .where('model', '=', row.model)
            .where('id', '=', row.id)
            .execute();
        }
        last = rows.at(-1)!;
      }
    },
  };
}
