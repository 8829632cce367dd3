// End users of the authorization server. A user's id is a UUID: the OIDC `sub` and the CustomerId
// of that user's orders.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { toDbTime } from '../db/codecs.ts';
import type { Database, UsersTable } from '../db/schema.ts';
import { isUuid } from '../http/validation.ts';
import { hashPassword } from './passwords.ts';

export interface User {
  id: string;
  email: string;
  name: string;
  createdAt: string;
}

export class DuplicateEmailError extends Error {}

/** E-mail addresses compare case-insensitively in practice; stored lower-cased so the unique index enforces it. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function createUser(
  db: Kysely<Database>,
  input: { email: string; name: string; password: string },
): Promise<User> {
  const email = normalizeEmail(input.email);
  if (await findUserByEmail(db, email)) throw new DuplicateEmailError(`a user with e-mail ${email} already exists`);
  const row = {
    id: randomUUID(),
    email,
    name: input.name.trim(),
    password_hash: await hashPassword(input.password),
    created_at: toDbTime(new Date()),
  };
  try {
    await db.insertInto('users').values(row).execute();
  } catch (err) {
    if (await findUserByEmail(db, email)) throw new DuplicateEmailError(`a user with e-mail ${email} already exists`);
    throw err;
  }
  return toUser(row);
}

export async function findUserByEmail(
  db: Kysely<Database>,
  email: string,
): Promise<(User & { passwordHash: string }) | undefined> {
  const row = await db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).executeTakeFirst();
  return row ? { ...toUser(row), passwordHash: row.password_hash } : undefined;
}

export async function findUserById(db: Kysely<Database>, id: string): Promise<User | undefined> {
  if (!isUuid(id)) return undefined; // never a PostgreSQL uuid cast error
  const row = await db.selectFrom('users').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst();
  return row ? toUser(row) : undefined;
}

export async function listUsers(db: Kysely<Database>): Promise<User[]> {
  return (await db.selectFrom('users').selectAll().orderBy('created_at').orderBy('id').execute()).map(toUser);
}

/** Deletes the user and every grant, session and token issued for them. */
export async function deleteUser(db: Kysely<Database>, idOrEmail: string): Promise<User | undefined> {
  const user = idOrEmail.includes('@') ? await findUserByEmail(db, idOrEmail) : await findUserById(db, idOrEmail);
  if (!user) return undefined;
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('oidc_payloads').where('account_id', '=', user.id).execute();
    await trx.deleteFrom('users').where('id', '=', user.id).execute();
  });
  return { id: user.id, email: user.email, name: user.name, createdAt: user.createdAt };
}

function toUser(row: UsersTable): User {
  return { id: row.id, email: row.email, name: row.name, createdAt: new Date(row.created_at).toISOString() };
}
