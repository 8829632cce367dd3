// The account store oidc-provider asks for claims (OIDC Core §5.1 names), and the same claims for the
// UserInfo answer to API access tokens (userinfo.ts). A disabled user has no account: oidc-provider then
// refuses their codes and refresh tokens (invalid_grant), and UserInfo their access tokens.
import type { Kysely } from 'kysely';
import type { Account } from 'oidc-provider';
import type { Database } from '../../db/schema.ts';
import { findUserById } from './users.repository.ts';

export interface UserClaims {
  sub: string;
  email: string;
  name: string;
}

/** What the provider knows of a signed-in user beyond claims: their roles gate some scopes (provider.ts). */
export interface SignetAccount extends Account {
  roles: readonly string[];
}

async function findActiveUser(db: Kysely<Database>, sub: string) {
  const user = await findUserById(db, sub);
  return user && user.disabledAt === null ? user : undefined;
}

export async function findUserClaims(db: Kysely<Database>, sub: string): Promise<UserClaims | undefined> {
  const user = await findActiveUser(db, sub);
  return user ? { sub: user.id, email: user.email, name: user.name } : undefined;
}

export async function findAccount(db: Kysely<Database>, sub: string): Promise<SignetAccount | undefined> {
  const user = await findActiveUser(db, sub);
  if (!user) return undefined;
  const claims: UserClaims = { sub: user.id, email: user.email, name: user.name };
  return {
    accountId: user.id,
    roles: user.roles,
    // oidc-provider filters these by the granted scopes (claims config in provider.ts).
    claims: async () => ({ ...claims }),
  };
}
