// oidc-provider configured for Signet: we choose its policies, storage, accounts and pages; the protocol
// is the library's. Every choice the RFCs leave open is stated here with its reason (docs/guides/signing-in-users.md).
import { timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import Provider, { errors, type Configuration } from 'oidc-provider';
import type { Database } from '../../db/schema.ts';
import { findAccount, type SignetAccount } from '../identity/accounts.ts';
import { mayIntrospect, recordIssuedJwt, registerJwtIntrospection } from '../tokens/introspection.ts';
import { hashClientSecret } from '../clients/clients.repository.ts';
import { publicJwks, type KeyMaterial } from '../tokens/keys.ts';
import { ClientAdapter, KyselyAdapter } from './oidc-adapter.ts';
import { pageHeaders, renderErrorPage, renderLogoutPage, renderLoggedOutPage } from '../interactions/pages.ts';
import { registrationFeatures, registrationStore, RegistrationLedger } from '../clients/registration.ts';
import type { RegistrationPolicy } from '../clients/registration-policy.ts';
import { RegistrationTokenAdapter } from '../clients/registration-tokens.ts';
import { registerEndpointLimits, type EndpointLimiter } from './endpoint-limits.ts';
import { registerRequestShaping } from './request-shaping.ts';
import { scopesAllowedFor, type ScopeRoles } from '../identity/roles.ts';
import { registerResponseShaping, requestIdOf, type ProviderRoutes } from './response-shaping.ts';
import { OIDC_SCOPE_CLAIMS, OIDC_SCOPE_DESCRIPTIONS, USERINFO_SCOPES, type ResourceDefinition } from './scopes.ts';
import { registerJwtUserinfo } from '../tokens/userinfo.ts';
import { consoleTokenClaims, registerConsoleTokens } from '../tokens/console-tokens.ts';

export interface ProviderSettings {
  issuer: string;
  resources: ResourceDefinition[];
  accessTokenTtlSeconds: number;
  accessTokenAlg: 'ES256' | 'EdDSA' | 'RS256' | 'PS256';
  refreshTokenTtlSeconds: number;
  sessionTtlSeconds: number;
  secureCookies: boolean;
  /** Scopes granted to a user only when they hold a role (roles.ts); client-credentials tokens are not gated. */
  scopeRoles?: ScopeRoles;
  /** RFC 7591/7592 with an initial access token (DYNAMIC_REGISTRATION; registration.ts). Off by default. */
  dynamicRegistration?: boolean;
  /** What a self-registered client may be (registration-policy.ts); required with dynamicRegistration. */
  registrationPolicy?: RegistrationPolicy;
  /** Rate limits of /token, /introspect and /reg (endpoint-limits.ts); none when undefined. */
  endpointLimiter?: EndpointLimiter;
}

const ROUTES: ProviderRoutes = {
  authorization: '/authorize',
  token: '/token',
  jwks: '/jwks',
  userinfo: '/userinfo',
  revocation: '/revoke',
  introspection: '/introspect',
  end_session: '/session/end',
};
/** RFC 7591 §3; its RFC 7592 client configuration endpoint is `/reg/{client_id}`. */
export const REGISTRATION_ROUTE = '/reg';
const AUTHORIZATION_CODE_TTL = 60; // RFC 6749 §4.1.2: short-lived, 10 minutes at most
const ID_TOKEN_TTL = 3600;
const INTERACTION_TTL = 600;

function interactionPath(issuer: string, uid: string): string {
  return `${new URL(issuer).pathname.replace(/\/$/, '')}/interaction/${uid}`;
}

export function createProvider(db: Kysely<Database>, keys: KeyMaterial, settings: ProviderSettings): Provider {
  const resourceFor = (uri: string): ResourceDefinition | undefined => settings.resources.find((r) => r.uri === uri);
  const apiScopes = new Set(settings.resources.flatMap((r) => r.scopes));
  const scopeRoles = settings.scopeRoles ?? {};
  const ledger = new RegistrationLedger();
  const clientStore = settings.dynamicRegistration ? registrationStore(db, ledger) : undefined;
  const configuration: Configuration = {
    adapter: (name: string) =>
      name === 'Client'
        ? new ClientAdapter(db, clientStore)
        : name === 'InitialAccessToken'
          ? new RegistrationTokenAdapter(db)
          : new KyselyAdapter(db, name),
    findAccount: (_ctx, sub) => findAccount(db, sub),
    jwks: keys.jwks as Configuration['jwks'],
    cookies: {
      keys: keys.cookieKeys,
      long: { signed: true, httpOnly: true, sameSite: 'lax', secure: settings.secureCookies },
      short: { signed: true, httpOnly: true, sameSite: 'lax', secure: settings.secureCookies },
    },
    // auth_time with openid: every ID token carries it (OIDC Core §2) without the client metadata
    // require_auth_time, which would refuse every request without openid (plain OAuth 2.0 clients).
    claims: { ...OIDC_SCOPE_CLAIMS, openid: [...OIDC_SCOPE_CLAIMS.openid!, 'auth_time'] },
    scopes: [...Object.keys(OIDC_SCOPE_DESCRIPTIONS), ...apiScopes],
    // ID tokens carry the granted profile claims (docs/guides/signing-in-users.md lists sub, email, name in the ID
    // token), not only the userinfo response.
    conformIdTokenClaims: false,
    responseTypes: ['code'], // no implicit or hybrid flow (docs/guides/signing-in-users.md; RFC 9700 §2.1.2)
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    pkce: { required: () => true }, // every client, confidential ones too (RFC 9700 §2.1.1); S256 only
    routes: { ...ROUTES, registration: REGISTRATION_ROUTE },
    ttl: {
      AccessToken: settings.accessTokenTtlSeconds,
      ClientCredentials: settings.accessTokenTtlSeconds,
      AuthorizationCode: AUTHORIZATION_CODE_TTL,
      IdToken: ID_TOKEN_TTL,
      RefreshToken: settings.refreshTokenTtlSeconds,
      Interaction: INTERACTION_TTL,
      Session: settings.sessionTtlSeconds,
      Grant: Math.max(settings.refreshTokenTtlSeconds, settings.sessionTtlSeconds),
    },
    // Refresh tokens for every client allowed the grant, without asking for offline_access; rotated on
    // every use (docs/guides/signing-in-users.md, Refresh); they outlive the browser session.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    expiresWithSession: async () => false,
    extraClientMetadata: { properties: ['cors_origins', 'first_party', 'resource_server'] },
    clientBasedCORS: (_ctx, origin, client) =>
      ((client as unknown as { cors_origins?: string[] }).cors_origins ?? []).includes(origin),
    interactions: { url: (_ctx, interaction) => interactionPath(settings.issuer, interaction.uid) },
    renderError: (ctx, out) => {
      ctx.set(pageHeaders());
      ctx.body = renderErrorPage(
        out.error,
        out.error_description,
        out.error === 'server_error' ? requestIdOf(ctx) : undefined,
      );
    },
    // Each JWT access token leaves a record of its grant, for introspection (introspection.ts).
    formats: { customizers: { jwt: recordIssuedJwt(db) } },
    // The portal's claims on the tokens Signet mints for its integrator portal (console-tokens.ts); none otherwise.
    extraTokenClaims: async (_ctx, token) => consoleTokenClaims(token),
    features: {
      devInteractions: { enabled: false },
      // Off: the API does not enforce DPoP proofs, so a DPoP-bound token would be no safer than a bearer
      // token there; and pushed requests would bypass request-shaping.ts.
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      clientCredentials: { enabled: true },
      // Off unless DYNAMIC_REGISTRATION=true: then an admin's initial access token is required (RFC 7591 §3).
      ...(settings.dynamicRegistration
        ? registrationFeatures([...apiScopes], ledger, requiredPolicy(settings.registrationPolicy), db)
        : {}),
      // RFC 7009 §2.1: a client revokes only tokens issued to it.
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => {
          if (token.clientId === client.clientId) return true;
          if (client.clientAuthMethod === 'none') return false;
          throw new errors.InvalidRequest('the token was not issued to this client');
        },
      },
      // RFC 7662 §2.1: confidential clients only, for tokens issued to them, or any token for a client
      // registered as a resource server; anything else is `{"active": false}` (§2.2), which reveals nothing.
      // JWT access tokens are answered by introspection.ts, with the same rule.
      introspection: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) =>
          mayIntrospect(client as unknown as Parameters<typeof mayIntrospect>[0], token.clientId),
      },
      userinfo: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx, form) => {
          // The confirmation form's redirect chain may end on the client's post-logout URI.
          const next = URL.parse(String(ctx.oidc.params?.post_logout_redirect_uri ?? ''));
          ctx.set(pageHeaders(next ? [next.origin] : []));
          ctx.body = renderLogoutPage(form);
        },
        postLogoutSuccessSource: (ctx) => {
          ctx.set(pageHeaders());
          ctx.body = renderLoggedOutPage();
        },
      },
      resourceIndicators: {
        enabled: true,
        // Clients allowed any API scope get API access tokens by default; clients that only sign users in
        // get a token for the userinfo endpoint.
        defaultResource: (_ctx, client) => defaultResourceFor(client?.scope) ?? (undefined as unknown as string),
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, uri, client) => resourceServerInfo(uri, client?.scope, ctx.oidc.account),
      },
    },
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256', 'EdDSA'],
    },
  };

  function defaultResourceFor(clientScope: string | undefined): string | undefined {
    const allowed = (clientScope ?? '').split(' ');
    return settings.resources.find((r) => r.scopes.some((s) => allowed.includes(s)))?.uri;
  }

  function resourceServerInfo(uri: string, clientScope: string | undefined, account: unknown) {
    const resource = resourceFor(uri);
    if (!resource) throw new errors.InvalidTarget(`unknown resource ${uri}`);
    // Only what the client is registered for today: a scope an admin took away from the client
    // (PATCH /api/admin/clients) never reaches a new token, even from a grant or refresh token
    // consented before. At the token endpoint (code exchange, refresh) the user is known too: a
    // scope their roles do not allow never reaches an access token either. Client credentials have
    // no account, and the client's registered scopes bound them.
    const registered = clientScope === undefined ? undefined : new Set(clientScope.split(' '));
    const forClient = registered ? resource.scopes.filter((s) => registered.has(s)) : resource.scopes;
    const user = account as SignetAccount | undefined;
    const scopes = user ? scopesAllowedFor(forClient, user.roles, scopeRoles) : forClient;
    return {
      // The OIDC scopes too: a code-flow token that was granted openid says so, and works at
      // UserInfo (userinfo.ts; OIDC Core §5.3.1). The API checks only its own scopes.
      scope: [...USERINFO_SCOPES, ...scopes].join(' '),
      audience: resource.uri,
      accessTokenTTL: settings.accessTokenTtlSeconds,
      accessTokenFormat: 'jwt' as const, // RFC 9068
      jwt: { sign: { alg: settings.accessTokenAlg } },
    };
  }

  const provider = new Provider(settings.issuer, configuration);
  // The provider sees the request as arriving at the issuer's own origin (see request-shaping.ts).
  provider.proxy = true;
  hashPresentedClientSecrets(provider);
  // Outermost first: the response shaping sees every answer, the request shaping's own included.
  registerResponseShaping(provider, { routes: ROUTES, issuer: settings.issuer });
  // Inside the response shaping (a 429 is an OAuth error like any other), before anything reads the request.
  if (settings.endpointLimiter)
    registerEndpointLimits(provider, settings.endpointLimiter, {
      token: ROUTES.token,
      introspection: ROUTES.introspection,
      registration: REGISTRATION_ROUTE,
    });
  registerRequestShaping(provider, { resources: settings.resources, apiScopes, db });
  registerJwtUserinfo(provider, {
    issuer: settings.issuer,
    route: ROUTES.userinfo,
    resources: settings.resources,
    jwks: publicJwks(keys),
    algorithm: settings.accessTokenAlg,
    db,
  });
  registerJwtIntrospection(provider, { db, keys, issuer: settings.issuer, accessTokenAlg: settings.accessTokenAlg });
  // The console's tokens for a client (console-tokens.ts) take the client_credentials grant's resource rules.
  registerConsoleTokens(provider, {
    defaultResource: defaultResourceFor,
    resourceServerInfo: (uri, clientScope) => resourceServerInfo(uri, clientScope, undefined),
  });
  return provider;
}

function requiredPolicy(policy: RegistrationPolicy | undefined): RegistrationPolicy {
  if (!policy) throw new Error('dynamic registration needs a registration policy (registration-policy.ts)');
  return policy;
}

/**
 * Only a secret's SHA-256 is stored (clients.repository.ts); the presented secret is hashed before the
 * constant-time comparison, so the provider never needs the plain value.
 */
function hashPresentedClientSecrets(provider: Provider): void {
  provider.Client.prototype.compareClientSecret = function compareHashed(
    this: { clientSecret?: string },
    presented: string,
  ): boolean {
    const stored = Buffer.from(this.clientSecret ?? '', 'hex');
    const actual = Buffer.from(hashClientSecret(presented), 'hex');
    return stored.length === actual.length && timingSafeEqual(stored, actual);
  } as never;
}
