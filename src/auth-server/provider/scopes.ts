// The OpenID Connect scopes, with the plain words the consent page shows for each, and the resource
// servers (RFC 8707) that tokens can be issued for. The resource API's own scopes are declared by the
// features that require them (orders.feature.ts, webhooks.feature.ts) and handed over by app.ts.

/** OIDC scope → what the user is agreeing to, in plain words. */
export const OIDC_SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  openid: 'Sign you in with your Signet account',
  profile: 'See your name',
  email: 'See your e-mail address',
  offline_access: 'Keep access while you are away',
};

/** The user claims each OIDC scope releases (OIDC Core §5.4), in the ID token and at UserInfo. */
export const OIDC_SCOPE_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  openid: ['sub'],
  email: ['email'],
  profile: ['name'],
};

/**
 * The OIDC scopes an API access token carries when they were granted, beside its API scopes: they
 * authorize it at UserInfo (OIDC Core §5.3.1), as they do the tokens of most OpenID providers. The API
 * ignores them (a route requires its own scopes).
 */
export const USERINFO_SCOPES: readonly string[] = Object.keys(OIDC_SCOPE_CLAIMS);

export interface ResourceDefinition {
  /** RFC 8707 resource indicator; also the `aud` of its access tokens. */
  uri: string;
  scopes: string[];
}

/**
 * `<resource_uri>/.default` (client credentials, docs/guides/signing-in-users.md): every scope the client may have
 * there.
 */
export function parseDefaultScope(scope: string, resources: ResourceDefinition[]): ResourceDefinition | undefined {
  if (!scope.endsWith('/.default')) return undefined;
  const uri = scope.slice(0, -'/.default'.length);
  return resources.find((r) => r.uri === uri);
}

/** The consent page's words for `scope`: OIDC's, or those of the API scopes (`apiScopes`), or the scope itself. */
export function describeScope(scope: string, apiScopes: Readonly<Record<string, string>>): string {
  return OIDC_SCOPE_DESCRIPTIONS[scope] ?? apiScopes[scope] ?? scope;
}
