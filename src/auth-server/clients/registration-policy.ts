// The registration policy (docs/security.md, "Registration"): what a self-registered client (RFC 7591) may
// be, whatever its registration token allows — like Keycloak's client registration policies ("Allowed
// Client Scopes", "Trusted Hosts"). The admin scopes are never in it: a client that can administer
// Signet is created by an admin (`signet client create`, POST /api/admin/clients), never by itself.
import type { Config } from '../../config/config.ts';
import type { GrantType } from './clients.repository.ts';

export interface RegistrationPolicy {
  /** The API scopes a self-registered client may have; the OpenID scopes are always allowed. */
  scopes: readonly string[];
  /** Scopes never given to a self-registered client, whatever the settings say (the admin scopes). */
  privilegedScopes: readonly string[];
  grantTypes: readonly GrantType[];
  /** Hosts redirect URIs may name (`*.example.com` matches the names below it); empty: any host. */
  redirectHosts: readonly string[];
}

/**
 * The policy from REGISTRATION_SCOPES, REGISTRATION_GRANT_TYPES, REGISTRATION_REDIRECT_HOSTS. A setting that
 * names an admin scope or an unknown one stops the start: a policy silently narrower than written would
 * hide the mistake.
 */
export function registrationPolicyOf(
  config: Pick<Config, 'registrationScopes' | 'registrationGrantTypes' | 'registrationRedirectHosts'>,
  apiScopes: readonly string[],
  privilegedScopes: readonly string[],
): RegistrationPolicy {
  const scopes = config.registrationScopes ?? apiScopes.filter((scope) => !privilegedScopes.includes(scope));
  for (const scope of scopes) {
    if (privilegedScopes.includes(scope))
      throw new Error(`REGISTRATION_SCOPES: ${scope} is never given to a self-registered client`);
    if (!apiScopes.includes(scope))
      throw new Error(`REGISTRATION_SCOPES: unknown scope ${scope} (the API's scopes are ${apiScopes.join(', ')})`);
  }
  return {
    scopes,
    privilegedScopes,
    grantTypes: config.registrationGrantTypes,
    redirectHosts: config.registrationRedirectHosts ?? [],
  };
}

/** Whether `host` (URL.hostname, lower case) is one the policy allows. */
export function redirectHostAllowed(policy: RegistrationPolicy, host: string): boolean {
  if (policy.redirectHosts.length === 0) return true;
  return policy.redirectHosts.some((allowed) =>
    allowed.startsWith('*.') ? host.endsWith(allowed.slice(1)) && host.length > allowed.length - 1 : host === allowed,
  );
}
