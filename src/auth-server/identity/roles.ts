// Scopes that only users holding a role may be granted (docs/security.md, "Roles"): the admin API's `admin:read`
// and `admin:write` need the `admin` role. app.ts hands the map over (scope → role), since the admin
// feature that declares them sits above the authorization server. A client-credentials token has no
// user: it gets what the client was registered for, which is how automation holds the admin scopes.

/** scope → the role a user must hold for a token carrying it. */
export type ScopeRoles = Readonly<Record<string, string>>;

/** The scopes of `scopes` that a user with `roles` may be granted. */
export function scopesAllowedFor(scopes: Iterable<string>, roles: readonly string[], scopeRoles: ScopeRoles): string[] {
  return [...scopes].filter((scope) => {
    const role = Object.hasOwn(scopeRoles, scope) ? scopeRoles[scope] : undefined;
    return role === undefined || roles.includes(role);
  });
}
