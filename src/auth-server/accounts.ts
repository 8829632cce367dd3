// The account store oidc-provider asks for claims (OIDC Core §5.1 names).
import type { Kysely } from 'kysely';
import type { Account } from 'oidc-provider';
import type { Database } from '../db/schema.ts';
import { findUserById } from './users.repository.ts';

export async function findAccount(db: Kysely<Database>, sub: string): Promise<Account | undefined> {
  const user = await findUserById(db, sub);
  if (!user) return undefined;
  return {
    accountId: user.id,
    // oidc-provider filters these by the granted scopes (claims config in provider.ts).
    claims: async () => ({ sub: user.id, email: user.email, name: user.name }),
  };
}
