// Users' roles and disabled state as the API's live check reads them (http/bearer/account-check.ts), with
// a small cache so a user's requests cost one primary-key read per few seconds, not one each.
//
// How fast a change applies (docs/security.md, "Roles"): a change made through this process (the admin
// API) forgets the user's entry once its transaction has committed, so the next request reads the new
// state; a change made elsewhere (another instance, the CLI) is seen once the entry is older than
// `ttlMs`. That bound is the guarantee with several instances.
import type { Db } from '../../db/executor.ts';
import type { AccountVerdict } from '../../http/bearer/account-check.ts';
import { scopesAllowedFor, type ScopeRoles } from './roles.ts';
import { findUserById } from './users.repository.ts';

interface Entry {
  /** The roles the user holds now; undefined when the user is disabled or gone. */
  roles: readonly string[] | undefined;
  refused: string | undefined;
  loadedAtMs: number;
}

export interface AccountStateOptions {
  db: Db;
  scopeRoles: ScopeRoles;
  ttlMs: number;
  /** Entries kept at most (the oldest goes first). */
  maxEntries?: number;
  now?: () => number;
}

export function createAccountStates(options: AccountStateOptions) {
  const { db, scopeRoles, ttlMs } = options;
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? 10_000;
  const entries = new Map<string, Entry>();
  const loading = new Map<string, Promise<Entry>>();
  // Bumped by every forget: a read that started before it may have seen the old row, and is not cached.
  let generation = 0;

  const load = (subject: string): Promise<Entry> => {
    const pending = loading.get(subject);
    if (pending) return pending;
    const started = generation;
    const read = findUserById(db, subject)
      .then((user): Entry => {
        const loadedAtMs = now();
        if (!user) return { roles: undefined, refused: 'the user of this token no longer exists', loadedAtMs };
        if (user.disabledAt !== null)
          return { roles: undefined, refused: 'the user of this token is disabled', loadedAtMs };
        return { roles: user.roles, refused: undefined, loadedAtMs };
      })
      .then((entry) => {
        if (ttlMs > 0 && generation === started) {
          entries.delete(subject); // re-inserted last: the Map's order is the eviction order
          if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
          entries.set(subject, entry);
        }
        return entry;
      })
      .finally(() => {
        if (loading.get(subject) === read) loading.delete(subject);
      });
    loading.set(subject, read);
    return read;
  };

  const verdict = (entry: Entry, scopes: ReadonlySet<string>): AccountVerdict => {
    if (entry.roles === undefined) return { refused: entry.refused! };
    let gated = false;
    for (const scope of scopes) if (Object.hasOwn(scopeRoles, scope)) gated = true;
    if (!gated) return { scopes };
    const allowed = scopesAllowedFor(scopes, entry.roles, scopeRoles);
    return allowed.length === scopes.size ? { scopes } : { scopes: new Set(allowed) };
  };

  return {
    /** What the user behind `subject` may still do with a token granted `scopes`. */
    check(principal: { subject: string; scopes: ReadonlySet<string> }): AccountVerdict | Promise<AccountVerdict> {
      const entry = entries.get(principal.subject);
      if (entry && now() - entry.loadedAtMs < ttlMs) return verdict(entry, principal.scopes);
      return load(principal.subject).then((fresh) => verdict(fresh, principal.scopes));
    },

    /** The user changed (roles, disabled, deleted, password): their next request reads them again. */
    forget(subject: string): void {
      generation++;
      entries.delete(subject);
      loading.delete(subject);
    },
  };
}

export type AccountStates = ReturnType<typeof createAccountStates>;
