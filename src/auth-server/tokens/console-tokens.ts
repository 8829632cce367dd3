// Access tokens that Signet mints for its own console (docs/guides/portal.md, "Portal links"): the integrator
// portal, opened by a portal link or by the client's owner, acts as that one client on the webhook API.
// The token is what the client_credentials grant would issue (RFC 6749 §4.4): oidc-provider's
// ClientCredentials model with the same resource server (audience, lifetime, RFC 9068 JWT format, signing
// algorithm), through the same rules as provider.ts; only the client authentication is skipped, because
// the caller is Signet itself, after checking the link or the owner.
import type Provider from 'oidc-provider';
import { PORTAL_CLAIM } from '../../http/bearer/token-verifier.ts';
import { USERINFO_SCOPES } from '../provider/scopes.ts';

interface ConsoleTokenRules {
  /** The resource a client_credentials request without `resource` gets (provider.ts defaultResource). */
  defaultResource(clientScope: string | undefined): string | undefined;
  /** provider.ts getResourceServerInfo for a request without an account (client credentials). */
  resourceServerInfo(uri: string, clientScope: string | undefined): { scope: string } & Record<string, unknown>;
}

const rules = new WeakMap<Provider, ConsoleTokenRules>();

/** Called by createProvider (provider.ts) so the tokens follow the provider's own resource rules. */
export function registerConsoleTokens(provider: Provider, tokenRules: ConsoleTokenRules): void {
  rules.set(provider, tokenRules);
}

/** A refusal: the client is unknown, or a scope is one the client is not registered for. */
export class ConsoleTokenError extends Error {}

/**
 * The claims a portal's token carries besides the client's (docs/guides/portal.md, "Customer portals"): the
 * portal session, the link that opened it and the customer it is limited to. The resource API reads them
 * (http/bearer/token-verifier.ts, PORTAL_CLAIM) to narrow what the token may do and to name the session in the
 * audit trail.
 */
export interface PortalTokenClaims {
  session_id: string;
  link_id?: string;
  customer_id?: string;
}

/** Claims for tokens minted here, looked up by provider.ts's extraTokenClaims while the token is saved. */
const extraClaims = new WeakMap<object, Record<string, unknown>>();

/** provider.ts `extraTokenClaims`: a console token's own claims; nothing for any token a client asked for. */
export function consoleTokenClaims(token: object): Record<string, unknown> | undefined {
  return extraClaims.get(token);
}

export interface ConsoleToken {
  accessToken: string;
  expiresIn: number;
  scope: string;
}

/**
 * A JWT access token for `clientId` carrying exactly `scopes`, which must all be among the client's
 * registered API scopes (a scope it may not have is refused, never silently dropped).
 */
export async function issueClientAccessToken(
  provider: Provider,
  clientId: string,
  scopes: readonly string[],
  portal?: PortalTokenClaims,
): Promise<ConsoleToken> {
  const tokenRules = rules.get(provider);
  if (!tokenRules) throw new Error('the provider was not built by createProvider (provider.ts)');
  const client = await provider.Client.find(clientId);
  if (!client) throw new ConsoleTokenError(`no client ${clientId}`);
  const resource = tokenRules.defaultResource(client.scope);
  if (!resource) throw new ConsoleTokenError(`client ${clientId} has no API scope`);
  const info = tokenRules.resourceServerInfo(resource, client.scope);
  // API scopes of the client's registration only: the OIDC scopes a code-flow client may ask for are about
  // a user signing in, and no token acting as the client itself should carry them.
  const registered = new Set((client.scope ?? '').split(' '));
  const allowed = new Set(
    info.scope.split(' ').filter((scope) => registered.has(scope) && !USERINFO_SCOPES.includes(scope)),
  );
  const refused = scopes.filter((scope) => !allowed.has(scope));
  if (scopes.length === 0 || refused.length > 0)
    throw new ConsoleTokenError(
      scopes.length === 0
        ? 'name at least one scope'
        : `client ${clientId} is not registered for ${refused.join(', ')}`,
    );
  const token = new provider.ClientCredentials({ client, scope: [...new Set(scopes)].join(' ') });
  token.resourceServer = new provider.ResourceServer(resource, info as never);
  if (portal) extraClaims.set(token, { [PORTAL_CLAIM]: portal });
  const accessToken = await token.save();
  return { accessToken, expiresIn: token.expiration, scope: token.scope ?? '' };
}
