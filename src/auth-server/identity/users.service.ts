// The rules for managing users, shared by the CLI (`signet user …`) and the admin API
// (/api/admin/users), so the two cannot drift apart (docs/guides/admin-api.md). Every change runs in
// one transaction with its audit entry (src/audit/audit.ts). Disabling or deleting a user ends their
// sessions and revokes their grants in that same transaction, so their refresh tokens fail at once;
// changing their roles revokes their grants too, so no token can keep a scope the roles no longer allow
// (and a newly granted role is offered at the next sign-in).
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import type { Db, Executor } from '../../db/executor.ts';
import { Problem, problemType } from '../../http/problems/problems.ts';
import { hasControlCharacter } from '../../http/problems/validation.ts';
import { revokeAccount } from '../provider/oidc-adapter.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.ts';
import {
  createUser,
  deleteUserRow,
  DuplicateEmailError,
  findUser,
  listUsersPage,
  lockUser,
  setPasswordHash,
  updateUserRow,
  type User,
  type UserPageQuery,
} from './users.repository.ts';

export type { User } from './users.repository.ts';

/** The roles a user can hold (docs/security.md, "Roles"); each is granted the scopes that require it. */
export const USER_ROLES = ['admin', 'auditor'] as const;

export const USER_PROBLEMS = {
  emailTaken: problemType('email-taken', 409, 'A user with this e-mail address already exists'),
} as const;

/** Who made the change, as the audit trail records it: the CLI's OS user, or the admin API's caller. */
export type ChangedBy = Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>;

interface NewUser {
  email: string;
  name: string;
  password: string;
  roles?: readonly string[];
}

interface UserChanges {
  email?: string;
  name?: string;
  roles?: readonly string[];
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface UsersServiceDeps {
  db: Db;
  /**
   * Called once a change to the user's roles, state, password or existence has committed: the API's live
   * check (account-states.ts) forgets what it cached about them.
   */
  onChange?: (userId: string) => void;
}

export function createUsersService(deps: UsersServiceDeps) {
  const { db } = deps;
  /** After the commit: a reader that saw the old row before it may not cache it (account-states.ts). */
  const changed = (user: User): User => {
    deps.onChange?.(user.id);
    return user;
  };

  async function existing(executor: Executor, idOrEmail: string): Promise<User> {
    const user = await findUser(executor, idOrEmail);
    if (!user) throw new Problem('notFound', `no user ${idOrEmail}`);
    return user;
  }

  function record(executor: Executor, by: ChangedBy, action: AuditEntry['action'], user: User, details = {}) {
    return recordAudit(executor, { ...by, action, target: { type: 'user', id: user.id }, details });
  }

  const service = {
    async list(query: UserPageQuery): Promise<{ users: User[]; more: boolean }> {
      return listUsersPage(db, query);
    },

    async get(idOrEmail: string): Promise<User> {
      return existing(db, idOrEmail);
    },

    async create(input: NewUser, by: ChangedBy): Promise<User> {
      checkEmail(input.email);
      checkName(input.name);
      checkPassword(input.password);
      const roles = checkRoles(input.roles ?? []);
      return db.transaction().execute(async (trx) => {
        const user = await createUser(trx, { ...input, roles }).catch(emailTaken);
        await record(trx, by, 'user.created', user, { email: user.email, roles: user.roles });
        return user;
      });
    },

    /**
     * Name, e-mail and roles. `expected` is the state the caller read (If-Match); a role change is audited
     * as `user.role_changed` and revokes the user's grants, any other change as `user.updated`.
     */
    async update(
      idOrEmail: string,
      changes: UserChanges,
      by: ChangedBy,
      expected?: (user: User) => void,
    ): Promise<User> {
      if (changes.email !== undefined) checkEmail(changes.email);
      if (changes.name !== undefined) checkName(changes.name);
      const roles = changes.roles === undefined ? undefined : checkRoles(changes.roles);
      const result = await db.transaction().execute(async (trx) => {
        await lockUser(trx, idOrEmail);
        const before = await existing(trx, idOrEmail);
        expected?.(before);
        await updateUserRow(trx, before.id, { email: changes.email, name: changes.name, roles }).catch(emailTaken);
        const after = await existing(trx, before.id);
        const profileChanged = after.email !== before.email || after.name !== before.name;
        if (profileChanged)
          await record(trx, by, 'user.updated', after, {
            changed: [
              ...(after.email !== before.email ? ['email'] : []),
              ...(after.name !== before.name ? ['name'] : []),
            ],
          });
        if (!sameRoles(before.roles, after.roles)) {
          await record(trx, by, 'user.role_changed', after, { from: before.roles, to: after.roles });
          // Existing grants were consented under the old roles: they go, so a refresh token cannot keep
          // a scope the new roles do not allow, and the next sign-in asks for what the roles now allow.
          await revokeGrantsOf(trx, after.id);
        }
        return after;
      });
      return changed(result);
    },

    async setRoles(idOrEmail: string, roles: readonly string[], by: ChangedBy): Promise<User> {
      return service.update(idOrEmail, { roles }, by);
    },

    /** The password is hashed (passwords.ts) and never logged, audited or echoed. */
    async setPassword(idOrEmail: string, password: string, by: ChangedBy): Promise<User> {
      checkPassword(password);
      const result = await db.transaction().execute(async (trx) => {
        const user = await existing(trx, idOrEmail);
        await setPasswordHash(trx, user.id, password);
        // A reset is what an admin does after a takeover: whoever signed in with the old password loses
        // their sessions and refresh tokens with it, as on disable.
        await revokeAccount(trx, user.id);
        await record(trx, by, 'user.password_set', user, { sessions_ended: true });
        return user;
      });
      return changed(result);
    },

    /** Refuses sign-in from now on, and ends every session and grant at once. Disabling twice changes nothing more. */
    async disable(idOrEmail: string, by: ChangedBy, now = new Date()): Promise<User> {
      const result = await db.transaction().execute(async (trx) => {
        const user = await existing(trx, idOrEmail);
        if (user.disabledAt === null) await updateUserRow(trx, user.id, { disabledAt: now });
        const revoked = await revokeAccount(trx, user.id);
        await record(trx, by, 'user.disabled', user, { revoked_rows: revoked });
        return existing(trx, user.id);
      });
      return changed(result);
    },

    async enable(idOrEmail: string, by: ChangedBy): Promise<User> {
      const result = await db.transaction().execute(async (trx) => {
        const user = await existing(trx, idOrEmail);
        if (user.disabledAt !== null) await updateUserRow(trx, user.id, { disabledAt: null });
        await record(trx, by, 'user.enabled', user);
        return existing(trx, user.id);
      });
      return changed(result);
    },

    /** The user and every session, grant and token issued for them. */
    async remove(idOrEmail: string, by: ChangedBy): Promise<User> {
      const result = await db.transaction().execute(async (trx) => {
        const user = await existing(trx, idOrEmail);
        await revokeAccount(trx, user.id);
        await deleteUserRow(trx, user.id);
        await record(trx, by, 'user.deleted', user, { email: user.email });
        return user;
      });
      return changed(result);
    },
  };
  return service;
}

export type UsersService = ReturnType<typeof createUsersService>;

/** Grants and what hangs off them (codes, refresh tokens); sessions stay, so the user stays signed in. */
async function revokeGrantsOf(executor: Executor, accountId: string): Promise<void> {
  const grants = await executor
    .selectFrom('oidc_payloads')
    .select('id')
    .where('model', '=', 'Grant')
    .where('account_id', '=', accountId)
    .execute();
  for (const { id } of grants) {
    await executor.deleteFrom('oidc_payloads').where('grant_id', '=', id).execute();
    await executor.deleteFrom('oidc_payloads').where('model', '=', 'Grant').where('id', '=', id).execute();
  }
}

function invalid(pointer: string, detail: string): Problem {
  return new Problem('validation', detail, { errors: [{ pointer, detail }] });
}

// Control characters: none belongs in an address or a name, and PostgreSQL refuses U+0000 in text (a 500).
function checkEmail(email: string): void {
  if (!EMAIL.test(email.trim()) || email.length > 254 || hasControlCharacter(email))
    throw invalid('/Email', 'must be an e-mail address');
}

function checkName(name: string): void {
  if (!name.trim() || name.length > 200) throw invalid('/Name', 'must be 1 to 200 characters, not only spaces');
  if (hasControlCharacter(name)) throw invalid('/Name', 'must not contain control characters');
}

function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH)
    throw invalid('/Password', `must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`);
}

function checkRoles(roles: readonly string[]): string[] {
  for (const role of roles)
    if (!(USER_ROLES as readonly string[]).includes(role))
      throw invalid('/Roles', `unknown role ${role}: the roles are ${USER_ROLES.join(', ')}`);
  return [...new Set(roles)].sort();
}

function sameRoles(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((role, i) => role === b[i]);
}

function emailTaken(err: unknown): never {
  if (err instanceof DuplicateEmailError) throw new Problem(USER_PROBLEMS.emailTaken, err.message);
  throw err;
}
