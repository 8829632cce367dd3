// End users of the authorization server. A user's id is a UUID: the OIDC `sub` and the CustomerId
// of that user's orders. Plain functions over an Executor (the database or an open transaction); the
// rules (audit, revocation on disable, roles) are in users.service.ts.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { toDbTime } from '../../db/codecs.ts';
import type { Executor } from '../../db/executor.ts';
import type { UsersTable } from '../../db/schema.ts';
import { isUuid } from '../../http/problems/validation.ts';
import { hashPassword } from './passwords.ts';
import { pastPosition } from '../../db/keyset.ts';

export interface User {
  id: string;
  email: string;
  name: string;
  createdAt: string;
  /** Role names (docs/security.md, "Roles"), e.g. ["admin"]. */
  roles: string[];
  /** When the user was disabled; null while they may sign in. */
  disabledAt: string | null;
}

export class DuplicateEmailError extends Error {}

/** E-mail addresses compare case-insensitively in practice; stored lower-cased so the unique index enforces it. */
function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function createUser(
  db: Executor,
  input: { email: string; name: string; password: string; roles?: readonly string[] },
): Promise<User> {
  const email = normalizeEmail(input.email);
  if (await findUserByEmail(db, email)) throw new DuplicateEmailError(`a user with e-mail ${email} already exists`);
  const row: UsersTable = {
    id: randomUUID(),
    email,
    name: input.name.trim(),
    password_hash: await hashPassword(input.password),
    created_at: toDbTime(new Date()),
    roles: JSON.stringify([...new Set(input.roles ?? [])].sort()),
    disabled_at: null,
  };
  try {
    await db.insertInto('users').values(row).execute();
  } catch (err) {
    // Inside a PostgreSQL transaction a failed statement aborts it: no second query, the service maps it.
    if (isUniqueViolation(err)) throw new DuplicateEmailError(`a user with e-mail ${email} already exists`);
    throw err;
  }
  return toUser(row);
}

export async function findUserByEmail(
  db: Executor,
  email: string,
): Promise<(User & { passwordHash: string }) | undefined> {
  const row = await db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).executeTakeFirst();
  return row ? { ...toUser(row), passwordHash: row.password_hash } : undefined;
}

export async function findUserById(db: Executor, id: string): Promise<User | undefined> {
  if (!isUuid(id)) return undefined; // never a PostgreSQL uuid cast error
  const row = await db.selectFrom('users').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst();
  return row ? toUser(row) : undefined;
}

/** A user named by id or by e-mail address (the CLI accepts both). */
export async function findUser(db: Executor, idOrEmail: string): Promise<User | undefined> {
  if (!idOrEmail.includes('@')) return findUserById(db, idOrEmail);
  const user = await findUserByEmail(db, idOrEmail);
  if (!user) return undefined;
  const { passwordHash: _hash, ...rest } = user;
  return rest;
}

/**
 * Takes the row lock of the user a read-check-write works on, before it reads: a concurrent change then
 * waits for this transaction and reads what it committed, so an If-Match checked against the state read
 * here cannot be overtaken (a lost update). A no-op UPDATE, because SQLite has no SELECT … FOR UPDATE
 * (its transactions take the write lock up front anyway).
 */
export async function lockUser(trx: Executor, idOrEmail: string): Promise<void> {
  const byEmail = idOrEmail.includes('@');
  if (!byEmail && !isUuid(idOrEmail)) return; // no such user: nothing to lock
  await trx
    .updateTable('users')
    .set((eb) => ({ name: eb.ref('name') }))
    .where(byEmail ? 'email' : 'id', '=', byEmail ? normalizeEmail(idOrEmail) : idOrEmail.toLowerCase())
    .execute();
}

export async function listUsers(db: Executor): Promise<User[]> {
  return (await db.selectFrom('users').selectAll().orderBy('created_at').orderBy('id').execute()).map(toUser);
}

export interface UserPageQuery {
  /** Only addresses containing this text (case-insensitive: addresses are stored lower-cased). */
  emailContains?: string;
  /** Keyset: the page starts after this user in (created_at, id) order. */
  after?: { createdAt: string; id: string };
  limit: number;
}

/** One page in (created_at, id) order: `limit + 1` rows are read so the caller knows whether more follow. */
export async function listUsersPage(db: Executor, query: UserPageQuery): Promise<{ users: User[]; more: boolean }> {
  let select = db.selectFrom('users').selectAll();
  if (query.emailContains) {
    const pattern = `%${escapeLike(normalizeEmail(query.emailContains))}%`;
    // SQLite has no default LIKE escape character; PostgreSQL's is the same backslash.
    select = select.where(sql<boolean>`email like ${pattern} escape '\\'`);
  }
  const after = query.after;
  if (after) {
    select = select.where(pastPosition('>', { createdAt: new Date(after.createdAt), id: after.id }));
  }
  const rows = await select
    .orderBy('created_at')
    .orderBy('id')
    .limit(query.limit + 1)
    .execute();
  return { users: rows.slice(0, query.limit).map(toUser), more: rows.length > query.limit };
}

export async function updateUserRow(
  db: Executor,
  id: string,
  changes: Partial<{ email: string; name: string; roles: readonly string[]; disabledAt: Date | null }>,
): Promise<void> {
  const set: Partial<UsersTable> = {};
  if (changes.email !== undefined) set.email = normalizeEmail(changes.email);
  if (changes.name !== undefined) set.name = changes.name.trim();
  if (changes.roles !== undefined) set.roles = JSON.stringify([...new Set(changes.roles)].sort());
  if (changes.disabledAt !== undefined) set.disabled_at = changes.disabledAt && toDbTime(changes.disabledAt);
  if (Object.keys(set).length === 0) return;
  try {
    await db.updateTable('users').set(set).where('id', '=', id).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new DuplicateEmailError(`a user with e-mail ${set.email} already exists`);
    throw err;
  }
}

export async function setPasswordHash(db: Executor, id: string, password: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ password_hash: await hashPassword(password) })
    .where('id', '=', id)
    .execute();
}

export async function deleteUserRow(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', id).execute();
}

/** LIKE wildcards in the search text match themselves (`\` is the escape in SQLite and PostgreSQL alike). */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** SQLite: SQLITE_CONSTRAINT_UNIQUE; PostgreSQL: 23505 unique_violation. */
function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  return (
    e?.code === '23505' ||
    e?.errcode === 2067 ||
    (typeof e?.message === 'string' && /UNIQUE constraint failed/i.test(e.message))
  );
}

function toUser(row: UsersTable): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    createdAt: new Date(row.created_at).toISOString(),
    roles: parseRoles(row.roles),
    disabledAt: row.disabled_at === null ? null : new Date(row.disabled_at).toISOString(),
  };
}

function parseRoles(stored: string): string[] {
  try {
    const parsed: unknown = JSON.parse(stored);
    return Array.isArray(parsed) ? parsed.filter((r): r is string => typeof r === 'string') : [];
  } catch {
    return [];
  }
}
