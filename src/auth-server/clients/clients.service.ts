// The rules for OAuth clients, shared by the CLI (`signet client …`), the admin API
// (/api/admin/clients) and dynamic registration (RFC 7591, oidc-adapter.ts), so they cannot drift apart
// (docs/guides/admin-api.md). Every change runs in one transaction with its audit entry
// (src/audit/audit.ts); an entry never holds a secret. A secret is returned once, by create and rotate.
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import type { Db, Executor } from '../../db/executor.ts';
import { Problem, problemType } from '../../http/problems/problems.ts';
import { hasControlCharacter } from '../../http/problems/validation.ts';
import { findUserByEmail } from '../identity/users.repository.ts';
import {
  createClient,
  deleteClient,
  findClient,
  GRANT_TYPES,
  listClientsPage,
  OIDC_SCOPES,
  rotateClientSecret,
  updateClientRow,
  lockClient,
  type ClientChanges,
  type ClientPageQuery,
  type ClientRecord,
  type GrantType,
  type NewClient,
} from './clients.repository.ts';

export type { ClientChanges, ClientRecord, GrantType, NewClient } from './clients.repository.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const CLIENT_PROBLEMS = {
  publicClient: problemType('public-client', 409, 'A public client has no secret'),
} as const;

/** Who made the change, as the audit trail records it: the CLI's OS user, or the admin API's caller. */
export type ChangedBy = Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>;

/** A client's members by their OAuth names (RFC 7591 §2), as the admin API and `--json` spell them. */
export type ClientField =
  | 'client_name'
  | 'client_type'
  | 'grant_types'
  | 'redirect_uris'
  | 'post_logout_redirect_uris'
  | 'scope'
  | 'cors_origins'
  | 'first_party'
  | 'resource_server'
  | 'owner';

/** The owner by e-mail address as the admin API and the CLI name it; null takes the owner away. */
export interface OwnerChange {
  owner?: string | null | undefined;
}

/**
 * A registration that could not work or would be unsafe. `explain` words it for whoever asked: the CLI
 * passes its option (`--redirect-uri`), the API the member name, whose JSON pointer goes in `errors`.
 */
export class ClientRuleError extends Error {
  readonly field: ClientField;
  readonly index: number | undefined;
  readonly explain: (name: string) => string;
  constructor(field: ClientField, explain: (name: string) => string, index?: number) {
    super(explain(field));
    this.field = field;
    this.index = index;
    this.explain = explain;
  }

  /** The 422 problem the admin API answers, with a pointer into the request body (RFC 6901). */
  toProblem(): Problem {
    const pointer = this.index === undefined ? `/${this.field}` : `/${this.field}/${this.index}`;
    return new Problem('validation', this.message, { errors: [{ pointer, detail: this.message }] });
  }
}

/** Refuses combinations that could not work or would be unsafe, saying what to change. */
/**
 * A client under OAuth's own field names (RFC 7591 §2): what `signet client … --json` prints and the admin
 * API answers, from one place so the two cannot drift apart. Never the secret or its hash.
 */
export function clientMetadataView(c: ClientRecord) {
  return {
    client_id: c.clientId,
    client_name: c.name,
    client_type: c.type,
    grant_types: c.grantTypes,
    redirect_uris: c.redirectUris,
    post_logout_redirect_uris: c.postLogoutRedirectUris,
    scope: c.scopes.join(' '),
    cors_origins: c.corsOrigins,
    first_party: c.firstParty,
    resource_server: c.resourceServer,
    created_at: c.createdAt,
    secret_rotated_at: c.secretRotatedAt,
    owner: c.ownerEmail,
  };
}

export function validateNewClient(client: NewClient, apiScopes: readonly string[]): NewClient {
  const rule = (field: ClientField, explain: (name: string) => string, index?: number) =>
    new ClientRuleError(field, explain, index);
  if (!client.name.trim() || client.name.length > 200)
    throw rule('client_name', (n) => `${n} <name> is required (1 to 200 characters)`);
  // It is shown on the consent page; and PostgreSQL refuses U+0000 in text (a 500 otherwise).
  if (hasControlCharacter(client.name)) throw rule('client_name', (n) => `${n} must not contain control characters`);
  if (client.type !== 'confidential' && client.type !== 'public')
    throw rule('client_type', (n) => `${n} must be confidential or public`);
  // RFC 7662 §2.1: introspection needs an authenticated caller.
  if (client.resourceServer && client.type !== 'confidential')
    throw rule(
      'resource_server',
      (n) => `${n} needs a confidential client (--type confidential): introspection requires client authentication`,
    );
  if (client.grantTypes.length === 0)
    throw rule('grant_types', (n) => `${n} is required: one or more of ${GRANT_TYPES.join(', ')}`);
  client.grantTypes.forEach((grant, i) => {
    if (!GRANT_TYPES.includes(grant))
      throw rule('grant_types', () => `unknown grant ${grant}: use ${GRANT_TYPES.join(', ')}`, i);
  });
  const grants = new Set(client.grantTypes);
  if (client.type === 'public' && grants.has('client_credentials'))
    throw rule(
      'grant_types',
      () => 'a public client cannot use client_credentials: it has no secret to authenticate with',
    );
  if (grants.has('refresh_token') && !grants.has('authorization_code'))
    throw rule(
      'grant_types',
      () => 'refresh_token needs authorization_code: refresh tokens are only issued in the code flow',
    );
  checkRedirectUris(client, grants);
  client.scopes.forEach((scope, i) => checkScope(scope, grants, apiScopes, i));
  // A machine client acts for itself on the API only: with no API scope it could get no token at all
  // (an empty `scope` is invalid client metadata for oidc-provider), so refuse it here, not at its first request.
  if (grants.has('client_credentials') && !client.scopes.some((scope) => apiScopes.includes(scope)))
    throw rule('scope', (n) => `client_credentials needs at least one API ${n}: ${apiScopes.join(', ')}`);
  client.corsOrigins.forEach((origin, i) => {
    const url = URL.parse(origin);
    if (!url || url.origin !== origin)
      throw rule('cors_origins', (n) => `${n} ${origin} is not an origin (scheme://host[:port], no path)`, i);
  });
  return client;
}

function checkRedirectUris(client: NewClient, grants: ReadonlySet<GrantType>): void {
  if (grants.has('authorization_code') && client.redirectUris.length === 0)
    throw new ClientRuleError('redirect_uris', (n) => `authorization_code needs at least one ${n}`);
  if (!grants.has('authorization_code') && client.redirectUris.length > 0)
    throw new ClientRuleError('redirect_uris', (n) => `${n} only applies to clients with the authorization_code grant`);
  client.redirectUris = client.redirectUris.map((uri, i) => checkRedirectUri(uri, 'redirect_uris', i));
  // RP-Initiated Logout 1.0 §3.1: the same rules as redirect URIs; only a client that signs users in has a session to
  // end.
  const postLogout = client.postLogoutRedirectUris ?? [];
  if (!grants.has('authorization_code') && postLogout.length > 0)
    throw new ClientRuleError(
      'post_logout_redirect_uris',
      (n) => `${n} only applies to clients with the authorization_code grant`,
    );
  client.postLogoutRedirectUris = postLogout.map((uri, i) => checkRedirectUri(uri, 'post_logout_redirect_uris', i));
}

/**
 * An API scope, or one of OpenID Connect's (OIDC Core §5.4, §11), which is what OIDC users type. The OIDC
 * scopes are stored as given but change nothing: every client with authorization_code may ask for them
 * anyway. A client without that grant never signs a user in, so for it they could only be a mistake.
 */
function checkScope(scope: string, grants: ReadonlySet<GrantType>, apiScopes: readonly string[], index: number): void {
  if (apiScopes.includes(scope)) return;
  if (OIDC_SCOPES.includes(scope)) {
    if (grants.has('authorization_code')) return;
    throw new ClientRuleError(
      'scope',
      (n) => `${n} ${scope} only applies to clients with the authorization_code grant: it is about signing a user in`,
      index,
    );
  }
  throw new ClientRuleError(
    'scope',
    () => `unknown scope ${scope}: use ${[...apiScopes, ...OIDC_SCOPES].join(', ')}`,
    index,
  );
}

/** RFC 3986 §2: the characters a URI may hold (unreserved, reserved, and `%` of a percent-encoding). */
const URI_CHARACTERS = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]*$/;
const BROKEN_PERCENT_ENCODING = /%(?![0-9A-Fa-f]{2})/;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/**
 * Exact-match redirect URIs (RFC 9700 §2.1): absolute, no fragment, https unless loopback (RFC 8252 §7.3),
 * only the characters RFC 3986 allows, no user information. Returns the URI as stored and compared:
 * normalised as RFC 3986 §6.2.2 describes (scheme and host in lower case, no default port, dot segments
 * removed, percent-encodings in upper case and unreserved characters decoded), so the stored form is
 * the one the client is told (RFC 7591 §3.2.1) and nothing in it differs from what a browser would send.
 */
export function checkRedirectUri(uri: string, field: ClientField, index: number): string {
  // Quoted when it holds what would blur the message (spaces, control characters).
  const shown = URI_CHARACTERS.test(uri) ? uri : JSON.stringify(uri);
  const refuse = (why: string) => new ClientRuleError(field, (n) => `${n} ${shown} ${why}`, index);
  // PostgreSQL refuses U+0000 in text.
  if (hasControlCharacter(uri)) throw refuse('must not contain control characters');
  if (!URI_CHARACTERS.test(uri))
    throw refuse('may hold only the characters of RFC 3986 §2: percent-encode spaces, <, >, quotes and non-ASCII');
  if (BROKEN_PERCENT_ENCODING.test(uri)) throw refuse('has a % that does not start a percent-encoding (%XX)');
  const url = URL.parse(uri);
  if (!url) throw refuse('is not an absolute URL');
  if (url.hash || uri.includes('#')) throw refuse('must not contain a fragment (RFC 6749 §3.1.2)');
  // RFC 3986 §3.2.1: "user:password" in a URI is deprecated; a redirect URI has no use for credentials.
  if (url.username || url.password || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(uri))
    throw refuse('must not carry user information (user:password@)');
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw refuse('must use https (http only for localhost/127.0.0.1)');
  return url.href.replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
  });
}

/** The facts an audit entry may hold about a client: never its secret. */
function auditDetails(client: ClientRecord): Record<string, string | boolean | null | readonly string[]> {
  return {
    client_name: client.name,
    client_type: client.type,
    grant_types: client.grantTypes,
    scope: client.scopes.join(' '),
    redirect_uris: client.redirectUris,
    first_party: client.firstParty,
    owner: client.ownerEmail,
  };
}

/** Which members an update changed, by their OAuth names. */
function changedFields(before: ClientRecord, after: ClientRecord): string[] {
  const pairs: [string, unknown, unknown][] = [
    ['client_name', before.name, after.name],
    ['redirect_uris', before.redirectUris, after.redirectUris],
    ['post_logout_redirect_uris', before.postLogoutRedirectUris, after.postLogoutRedirectUris],
    ['scope', before.scopes, after.scopes],
    ['cors_origins', before.corsOrigins, after.corsOrigins],
    ['first_party', before.firstParty, after.firstParty],
    ['owner', before.ownerId, after.ownerId],
  ];
  return pairs.filter(([, a, b]) => JSON.stringify(a) !== JSON.stringify(b)).map(([name]) => name);
}

export function createClientsService(deps: { db: Db; apiScopes: readonly string[] }) {
  const { db, apiScopes } = deps;

  async function existing(executor: Executor, clientId: string): Promise<ClientRecord> {
    const client = await findClient(executor, clientId);
    if (!client) throw new Problem('notFound', `no client ${clientId}`);
    return client;
  }

  /** The owner's users.id from their e-mail address; an unknown address is refused, pointing at `owner`. */
  async function ownerIdOf(executor: Executor, change: OwnerChange): Promise<string | null | undefined> {
    if (change.owner === undefined || change.owner === null) return change.owner;
    const email = change.owner;
    const user = await findUserByEmail(executor, email);
    if (!user) throw new ClientRuleError('owner', (n) => `${n} ${email}: no user has this e-mail address`);
    return user.id;
  }

  function record(executor: Executor, by: ChangedBy, action: AuditEntry['action'], clientId: string, details = {}) {
    return recordAudit(executor, { ...by, action, target: { type: 'client', id: clientId }, details });
  }

  return {
    /** `ownerEmail`: only that user's clients (none when no user has the address). */
    async list(query: ClientPageQuery & { ownerEmail?: string }): Promise<{ clients: ClientRecord[]; more: boolean }> {
      const { ownerEmail, ...page } = query;
      // A user id is a UUID (users.id): another subject owns nothing, and PostgreSQL would refuse it as uuid.
      if (page.ownerId !== undefined && !UUID.test(page.ownerId)) return { clients: [], more: false };
      if (ownerEmail === undefined) return listClientsPage(db, page);
      const owner = await findUserByEmail(db, ownerEmail);
      return owner ? listClientsPage(db, { ...page, ownerId: owner.id }) : { clients: [], more: false };
    },

    async get(clientId: string): Promise<ClientRecord> {
      return existing(db, clientId);
    },

    /** The secret (confidential clients) is returned here once; only its hash is stored. */
    async create(
      input: NewClient & OwnerChange,
      by: ChangedBy,
    ): Promise<{ client: ClientRecord; clientSecret: string | undefined }> {
      const { owner, ...fields } = input;
      const client = validateNewClient({ ...fields, name: input.name.trim() }, apiScopes);
      return db.transaction().execute(async (trx) => {
        const ownerId = await ownerIdOf(trx, { owner });
        const { record: created, clientSecret } = await createClient(trx, { ...client, ownerId });
        await record(trx, by, 'client.created', created.clientId, auditDetails(created));
        return { client: created, clientSecret };
      });
    },

    /**
     * Name, redirect URIs, post-logout URIs, scopes, CORS origins, first-party: the result must pass the
     * same rules as a new client. `expected` checks the state read inside the transaction (If-Match).
     */
    async update(
      clientId: string,
      input: ClientChanges & OwnerChange,
      by: ChangedBy,
      expected?: (client: ClientRecord) => void,
    ): Promise<ClientRecord> {
      const { owner, ...rest } = input;
      return db.transaction().execute(async (trx) => {
        await lockClient(trx, clientId);
        const before = await existing(trx, clientId);
        expected?.(before);
        const changes = definedOnly({ ...rest, ownerId: await ownerIdOf(trx, { owner }) });
        const merged = { ...before, ...changes };
        const valid = validateNewClient({ ...merged, name: merged.name.trim() }, apiScopes);
        // The URIs as normalised by the rules (checkRedirectUri), when they are among the changes.
        const uris = {
          redirectUris: changes.redirectUris && valid.redirectUris,
          postLogoutRedirectUris: changes.postLogoutRedirectUris && valid.postLogoutRedirectUris,
        };
        await updateClientRow(trx, clientId, { ...changes, ...definedOnly(uris), name: merged.name.trim() });
        const after = await existing(trx, clientId);
        const changed = changedFields(before, after);
        // An owner change names both addresses: who could manage the client's webhooks, and who can now.
        const owners = changed.includes('owner') ? { previous_owner: before.ownerEmail, owner: after.ownerEmail } : {};
        if (changed.length > 0) await record(trx, by, 'client.updated', clientId, { changed, ...owners });
        return after;
      });
    },

    /** The new secret is returned once; the old one stops working at once. */
    async rotateSecret(clientId: string, by: ChangedBy): Promise<{ client: ClientRecord; clientSecret: string }> {
      return db.transaction().execute(async (trx) => {
        const client = await existing(trx, clientId);
        const clientSecret = await rotateClientSecret(trx, clientId);
        if (!clientSecret)
          throw new Problem(CLIENT_PROBLEMS.publicClient, `client ${clientId} is a public client: it has no secret`);
        await record(trx, by, 'client.secret_rotated', clientId);
        return { client: await existing(trx, client.clientId), clientSecret };
      });
    },

    /** The client and every grant and token issued to it. */
    async remove(clientId: string, by: ChangedBy): Promise<ClientRecord> {
      return db.transaction().execute(async (trx) => {
        const client = await existing(trx, clientId);
        await deleteClient(trx, clientId);
        await record(trx, by, 'client.deleted', clientId, { client_name: client.name });
        return client;
      });
    },
  };
}

export type ClientsService = ReturnType<typeof createClientsService>;

function definedOnly(changes: ClientChanges): ClientChanges {
  return Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) as ClientChanges;
}
