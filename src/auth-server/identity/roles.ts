// Scopes that only users holding a role may be granted (docs/security.md, "Roles"): the admin API's
// `admin:read` needs the `admin` or the `auditor` role, `admin:write` the `admin` role. app.ts hands the map
// over (scope → roles), since the admin feature that declares them sits above the authorization server. A
// client-credentials token has no user: it gets what the client was registered for, which is how
// automation holds the admin scopes.

/** scope → the roles any one of which lets a user's token carry it. */
export type ScopeRoles = Readonly<Record<string, readonly string[]>>;

/** The scopes of `scopes` that a user with `roles` may be granted. */
export function scopesAllowedFor(scopes: Iterable<string>, roles: readonly string[], scopeRoles: ScopeRoles): string[] {
  return [...scopes].filter((scope) => {
    const needed = Object.hasOwn(scopeRoles, scope) ? scopeRoles[scope] : undefined;
    return needed === undefined || needed.some((role) => roles.includes(role));
  });
}
