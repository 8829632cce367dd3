// Dynamic client registration (RFC 7591) and its management (RFC 7592) through oidc-provider's own
// features, on only with DYNAMIC_REGISTRATION=true (docs/guides/admin-api.md). A registered
// client is an ordinary row of oauth_clients (ClientAdapter, oidc-adapter.ts), with its secret hashed, and
// it obeys the rules of clients made with the CLI or the admin API (clients.service.ts): the policies below
// apply them before oidc-provider stores anything, then the registration policy (registration-policy.ts:
// scopes, grant types, redirect hosts; never an admin scope), and limit the API scopes to those the initial
// access token allows (registration-tokens.ts); a registration that passed them all spends one use of the
// token. PKCE is required of every client anyway (provider.ts).
import { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import type { Db } from '../../db/executor.ts';
import {
  createClient,
  deleteClient,
  findClient,
  newClientId,
  newClientSecret,
  OIDC_SCOPES,
  toMetadata,
  updateClientRow,
  type GrantType,
  type NewClient,
} from './clients.repository.ts';
import { ClientRuleError, validateNewClient } from './clients.service.ts';
import type { ClientStore } from '../provider/oidc-adapter.ts';
import { redirectHostAllowed, type RegistrationPolicy } from './registration-policy.ts';
import { CLIENT_RULES_POLICY, consumeRegistrationToken, SCOPE_POLICY_PREFIX } from './registration-tokens.ts';
import { requestIdOf } from '../provider/response-shaping.ts';

type Metadata = Record<string, unknown>;
type ChangedBy = Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'> & {
  /** The registration token (`rt_…`) a new client was registered with. */
  registrationTokenId?: string;
};

/** The members of a registration response oidc-provider adds itself; everything else is ours. */
const PROVIDER_MEMBERS = ['client_id', 'client_id_issued_at', 'client_secret', 'client_secret_expires_at'];

/**
 * Shared by the policies (which see the request) and ClientAdapter (which stores the client): who
 * registered or updated which client, for its audit entry in the storing transaction.
 */
export class RegistrationLedger {
  /** A registration oidc-provider refused after the policies ran is never taken: its note expires. */
  static readonly KEEP_MS = 60_000;
  readonly #pending = new Map<string, { by: ChangedBy; at: number }>();
  note(clientId: string, by: ChangedBy, now = Date.now()): void {
    for (const [id, entry] of this.#pending) if (now - entry.at > RegistrationLedger.KEEP_MS) this.#pending.delete(id);
    this.#pending.set(clientId, { by, at: now });
  }
  take(clientId: string): ChangedBy {
    const entry = this.#pending.get(clientId);
    this.#pending.delete(clientId);
    return entry?.by ?? { actor: { type: 'client', id: clientId } };
  }
  get size(): number {
    return this.#pending.size;
  }
}

/** The request's metadata as a client of ours; defaults as RFC 7591 §2 states them. */
function clientFromMetadata(metadata: Metadata): NewClient {
  const list = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  const clientId = typeof metadata.client_id === 'string' ? metadata.client_id : '';
  return {
    name: typeof metadata.client_name === 'string' && metadata.client_name.trim() ? metadata.client_name : clientId,
    type: metadata.token_endpoint_auth_method === 'none' ? 'public' : 'confidential',
    grantTypes: (metadata.grant_types === undefined
      ? ['authorization_code']
      : list(metadata.grant_types)) as GrantType[],
    redirectUris: list(metadata.redirect_uris),
    postLogoutRedirectUris: list(metadata.post_logout_redirect_uris),
    scopes: typeof metadata.scope === 'string' ? metadata.scope.split(' ').filter(Boolean) : [],
    corsOrigins: list(metadata.cors_origins),
    firstParty: false,
    resourceServer: false,
  };
}

/** The `features.registration` and `features.registrationManagement` settings (provider.ts). */
export function registrationFeatures(
  apiScopes: readonly string[],
  ledger: RegistrationLedger,
  policy: RegistrationPolicy,
  db: Db,
): Pick<NonNullable<Configuration['features']>, 'registration' | 'registrationManagement'> {
  const allowed = new WeakMap<object, Set<string>>();
  const allowedIn = (ctx: object): Set<string> => {
    let scopes = allowed.get(ctx);
    if (!scopes) allowed.set(ctx, (scopes = new Set()));
    return scopes;
  };
  const scopePolicies = Object.fromEntries(
    [...apiScopes, ...OIDC_SCOPES].map((scope) => [
      `${SCOPE_POLICY_PREFIX}${scope}`,
      (ctx: KoaContextWithOIDC) => void allowedIn(ctx).add(scope),
    ]),
  );
  return {
    registration: {
      enabled: true,
      // RFC 7591 §3: registration only with a token an admin issued (registration-tokens.ts).
      initialAccessToken: true,
      idFactory: () => newClientId(),
      secretFactory: () => newClientSecret(),
      issueRegistrationAccessToken: true,
      policies: {
        ...scopePolicies,
        [CLIENT_RULES_POLICY]: (ctx: KoaContextWithOIDC, properties: Metadata) =>
          applyClientRules(ctx, properties, { apiScopes, allowed: allowedIn(ctx), ledger, policy, db }),
      },
    },
    // RFC 7592: the registered client reads, updates and deletes itself with its registration access token.
    registrationManagement: { enabled: true, rotateRegistrationAccessToken: true },
  };
}

interface RulesContext {
  apiScopes: readonly string[];
  /** The API scopes the registration token allows. */
  allowed: ReadonlySet<string>;
  ledger: RegistrationLedger;
  policy: RegistrationPolicy;
  db: Db;
}

async function applyClientRules(ctx: KoaContextWithOIDC, properties: Metadata, rules: RulesContext): Promise<void> {
  const { apiScopes, allowed, ledger, policy } = rules;
  const method = properties.token_endpoint_auth_method ?? 'client_secret_basic';
  if (method !== 'client_secret_basic' && method !== 'none')
    throw new errors.InvalidClientMetadata('token_endpoint_auth_method must be client_secret_basic or none');
  for (const member of ['first_party', 'resource_server'])
    if (properties[member] === true)
      throw new errors.InvalidClientMetadata(`${member} is set by an administrator only (signet client, admin API)`);
  const client = clientFromMetadata({ ...properties, token_endpoint_auth_method: method });
  const existing = ctx.oidc.client;
  if (existing && (existing.clientAuthMethod !== method || !sameList(existing.grantTypes ?? [], client.grantTypes)))
    throw new errors.InvalidClientMetadata('grant_types and token_endpoint_auth_method cannot change: register anew');
  try {
    validateNewClient(client, apiScopes);
  } catch (err) {
    if (!(err instanceof ClientRuleError)) throw err;
    const message = err.explain(err.field);
    throw err.field === 'redirect_uris' || err.field === 'post_logout_redirect_uris'
      ? // RFC 7591 §3.2.2; oidc-provider's error carries a fixed description, which would not say what to change.
        Object.assign(new errors.InvalidRedirectUri(), { error_description: message })
      : new errors.InvalidClientMetadata(message);
  }
  applyPolicy(client, policy, allowed, apiScopes);
  const registrationTokenId = existing ? undefined : await spendToken(ctx, rules.db);
  // RFC 7591 §3.2.1: the response states the metadata as registered, which is exactly what is stored;
  // members Signet does not keep are dropped rather than echoed as if they applied.
  const clientId = String(properties.client_id);
  for (const member of Object.keys(properties)) if (!PROVIDER_MEMBERS.includes(member)) delete properties[member];
  const { client_secret: _none, ...stored } = toMetadata({ ...client, clientId }, undefined);
  Object.assign(properties, stored);
  ledger.note(clientId, {
    actor: { type: 'client', id: clientId },
    requestId: requestIdOf(ctx),
    sourceAddress: ctx.ip,
    ...(registrationTokenId ? { registrationTokenId } : {}),
  });
}

/** The registration policy, then the token's own scopes (RFC 7591 §3.2.2: invalid_client_metadata, invalid_redirect_uri). */
function applyPolicy(
  client: NewClient,
  policy: RegistrationPolicy,
  allowed: ReadonlySet<string>,
  apiScopes: readonly string[],
): void {
  const grants = client.grantTypes.filter((grant) => !policy.grantTypes.includes(grant));
  if (grants.length > 0)
    throw new errors.InvalidClientMetadata(
      `the registration policy does not allow the grant type ${grants.join(' ')}: use ${policy.grantTypes.join(', ')}`,
    );
  const apiScopesAsked = client.scopes.filter((scope) => apiScopes.includes(scope));
  const privileged = apiScopesAsked.filter((scope) => policy.privilegedScopes.includes(scope));
  if (privileged.length > 0)
    throw new errors.InvalidClientMetadata(
      `${privileged.join(' ')} is never given to a self-registered client: ask an administrator`,
    );
  const outside = apiScopesAsked.filter((scope) => !policy.scopes.includes(scope));
  if (outside.length > 0)
    throw new errors.InvalidClientMetadata(`the registration policy does not allow the scope ${outside.join(' ')}`);
  const refused = apiScopesAsked.filter((scope) => !allowed.has(scope));
  if (refused.length > 0)
    throw new errors.InvalidClientMetadata(`the initial access token does not allow the scope ${refused.join(' ')}`);
  for (const uri of [...client.redirectUris, ...(client.postLogoutRedirectUris ?? [])]) {
    const host = new URL(uri).hostname;
    if (!redirectHostAllowed(policy, host))
      throw Object.assign(new errors.InvalidRedirectUri(), {
        error_description: `the registration policy does not allow redirects to ${host}: use ${policy.redirectHosts.join(', ')}`,
      });
  }
}

/**
 * A new registration spends one use of its initial access token, atomically (registration-tokens.ts): of
 * two concurrent registrations with a one-use token, one gets the client, the other 401 invalid_token.
 */
async function spendToken(ctx: KoaContextWithOIDC, db: Db): Promise<string | undefined> {
  const token = ctx.oidc.entities.InitialAccessToken?.jti;
  if (!token) return undefined;
  const id = await consumeRegistrationToken(db, token);
  if (!id) throw new errors.InvalidToken('the initial access token is used up, revoked or expired');
  return id;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
}

/**
 * ClientAdapter.upsert: a new client (RFC 7591) is inserted with its secret hashed and audited as
 * `client.registered`; an existing one (RFC 7592 update) gets the members an update may change. The secret
 * oidc-provider hands back on update is the stored hash (it read the client through find): it is kept.
 */
async function storeRegisteredClient(
  db: Db,
  clientId: string,
  metadata: Metadata,
  ledger: RegistrationLedger,
): Promise<void> {
  const client = clientFromMetadata({ ...metadata, client_id: clientId });
  const { registrationTokenId, ...by } = ledger.take(clientId);
  await db.transaction().execute(async (trx) => {
    const before = await findClient(trx, clientId);
    if (!before) {
      const secret = typeof metadata.client_secret === 'string' ? metadata.client_secret : undefined;
      await createClient(trx, client, { clientId, clientSecret: secret });
      await recordAudit(trx, {
        ...by,
        action: 'client.registered',
        target: { type: 'client', id: clientId },
        details: {
          client_name: client.name,
          grant_types: client.grantTypes,
          scope: client.scopes.join(' '),
          ...(registrationTokenId ? { registration_token: registrationTokenId } : {}),
        },
      });
      return;
    }
    await updateClientRow(trx, clientId, {
      name: client.name,
      redirectUris: client.redirectUris,
      postLogoutRedirectUris: client.postLogoutRedirectUris,
      scopes: client.scopes,
      corsOrigins: client.corsOrigins,
    });
    await recordAudit(trx, {
      ...by,
      action: 'client.updated',
      target: { type: 'client', id: clientId },
      details: { via: 'registration_management' },
    });
  });
}

/** RFC 7592 §2.3: the client deletes itself; its grants and tokens go with it, as with `signet client delete`. */
async function removeRegisteredClient(db: Db, clientId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const client = await findClient(trx, clientId);
    if (!client) return;
    await deleteClient(trx, clientId);
    await recordAudit(trx, {
      actor: { type: 'client', id: clientId },
      action: 'client.deleted',
      target: { type: 'client', id: clientId },
      details: { client_name: client.name, via: 'registration_management' },
    });
  });
}

/** The ClientAdapter's store (oidc-adapter.ts) for a provider with registration on. */
export function registrationStore(db: Db, ledger: RegistrationLedger): ClientStore {
  return {
    upsert: (clientId, metadata) => storeRegisteredClient(db, clientId, metadata, ledger),
    destroy: (clientId) => removeRegisteredClient(db, clientId),
  };
}
