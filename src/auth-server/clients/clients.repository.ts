// OAuth clients: created and managed through clients.service.ts (the CLI and the admin API) or by dynamic
// registration (RFC 7591, through ClientAdapter), read by oidc-provider through ClientAdapter.
// A confidential client's secret is 256 random bits shown once; only its SHA-256 is stored. A fast hash
// is right here: guessing a 256-bit value is hopeless, so a slow KDF would only tax every token request.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { toDbTime } from '../../db/codecs.ts';
import type { Executor } from '../../db/executor.ts';
import type { Database, OAuthClientsTable } from '../../db/schema.ts';

type ClientType = 'confidential' | 'public';
export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
/** Scopes of the OpenID layer, allowed to every client that signs users in. */
export const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'];

export interface NewClient {
  name: string;
  type: ClientType;
  grantTypes: GrantType[];
  redirectUris: string[];
  scopes: string[];
  corsOrigins: string[];
  firstParty: boolean;
  /** Where RP-initiated logout may return the browser (OpenID Connect RP-Initiated Logout 1.0 §3.1). */
  postLogoutRedirectUris?: string[];
  /** May introspect every access token, not only its own (docs/guides/signing-in-users.md, Introspection). */
  resourceServer?: boolean;
  /** The user (users.id) who owns the client and manages its webhooks in the portal; null: nobody. */
  ownerId?: string | null;
}

export interface ClientRecord extends NewClient {
  postLogoutRedirectUris: string[];
  resourceServer: boolean;
  clientId: string;
  createdAt: string;
  secretRotatedAt: string | null;
  ownerId: string | null;
  /** The owner's e-mail address, read with the client (null: no owner). */
  ownerEmail: string | null;
}

export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function newClientSecret(): string {
  return `scs_${randomBytes(32).toString('base64url')}`;
}

export function newClientId(): string {
  return `cl_${randomUUID().replaceAll('-', '')}`;
}

export async function createClient(
  db: Executor,
  client: NewClient,
  given: { clientId?: string; clientSecret?: string } = {},
): Promise<{ record: ClientRecord; clientSecret: string | undefined }> {
  const clientId = given.clientId ?? newClientId();
  const clientSecret = client.type === 'confidential' ? (given.clientSecret ?? newClientSecret()) : undefined;
  await db
    .insertInto('oauth_clients')
    .values({
      id: clientId,
      name: client.name,
      type: client.type,
      secret_hash: clientSecret ? hashClientSecret(clientSecret) : null,
      grant_types: client.grantTypes.join(' '),
      redirect_uris: JSON.stringify(client.redirectUris),
      scopes: client.scopes.join(' '),
      cors_origins: JSON.stringify(client.corsOrigins),
      first_party: client.firstParty ? 1 : 0,
      post_logout_redirect_uris: JSON.stringify(client.postLogoutRedirectUris ?? []),
      resource_server: client.resourceServer ? 1 : 0,
      created_at: toDbTime(new Date()),
      secret_rotated_at: null,
      owner_id: client.ownerId ?? null,
    })
    .execute();
  const record = await findClient(db, clientId);
  if (!record) throw new Error('client vanished after insert');
  return { record, clientSecret };
}

/** The clients with their owner's e-mail address (a left join: most clients have no owner). */
function selectClients(db: Executor) {
  return db
    .selectFrom('oauth_clients')
    .leftJoin('users', 'users.id', 'oauth_clients.owner_id')
    .selectAll('oauth_clients')
    .select('users.email as owner_email');
}

export async function findClient(db: Executor, clientId: string): Promise<ClientRecord | undefined> {
  const row = await selectClients(db).where('oauth_clients.id', '=', clientId).executeTakeFirst();
  return row ? toRecord(row) : undefined;
}

export async function listClients(db: Kysely<Database>): Promise<ClientRecord[]> {
  const rows = await selectClients(db).orderBy('oauth_clients.created_at').orderBy('oauth_clients.id').execute();
  return rows.map(toRecord);
}

export interface ClientPageQuery {
  limit: number;
  /** The last client of the previous page (created_at, id order). */
  after?: { createdAt: string; id: string } | undefined;
  /** Only the clients this user (users.id) owns. */
  ownerId?: string | undefined;
}

export async function listClientsPage(
  db: Executor,
  query: ClientPageQuery,
): Promise<{ clients: ClientRecord[]; more: boolean }> {
  let select = selectClients(db);
  const after = query.after;
  if (after) {
    const at = toDbTime(new Date(after.createdAt));
    select = select.where((eb) =>
      eb.or([
        eb('oauth_clients.created_at', '>', at),
        eb.and([eb('oauth_clients.created_at', '=', at), eb('oauth_clients.id', '>', after.id)]),
      ]),
    );
  }
  if (query.ownerId !== undefined) select = select.where('oauth_clients.owner_id', '=', query.ownerId);
  const rows = await select
    .orderBy('oauth_clients.created_at')
    .orderBy('oauth_clients.id')
    .limit(query.limit + 1)
    .execute();
  return { clients: rows.slice(0, query.limit).map(toRecord), more: rows.length > query.limit };
}

/** What an update may change; type and grant types are fixed at creation. */
export type ClientChanges = Partial<
  Pick<
    NewClient,
    'name' | 'redirectUris' | 'postLogoutRedirectUris' | 'scopes' | 'corsOrigins' | 'firstParty' | 'ownerId'
  >
>;

/**
 * Takes the client's row lock before a read-check-write (If-Match) reads it, so a concurrent change waits
 * and then reads what this one committed: no lost update. A no-op UPDATE: SQLite has no FOR UPDATE.
 */
export async function lockClient(trx: Executor, clientId: string): Promise<void> {
  await trx
    .updateTable('oauth_clients')
    .set((eb) => ({ name: eb.ref('name') }))
    .where('id', '=', clientId)
    .execute();
}

export async function updateClientRow(db: Executor, clientId: string, changes: ClientChanges): Promise<void> {
  const set: Partial<OAuthClientsTable> = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.redirectUris !== undefined) set.redirect_uris = JSON.stringify(changes.redirectUris);
  if (changes.postLogoutRedirectUris !== undefined)
    set.post_logout_redirect_uris = JSON.stringify(changes.postLogoutRedirectUris);
  if (changes.scopes !== undefined) set.scopes = changes.scopes.join(' ');
  if (changes.corsOrigins !== undefined) set.cors_origins = JSON.stringify(changes.corsOrigins);
  if (changes.firstParty !== undefined) set.first_party = changes.firstParty ? 1 : 0;
  if (changes.ownerId !== undefined) set.owner_id = changes.ownerId;
  if (Object.keys(set).length === 0) return;
  await db.updateTable('oauth_clients').set(set).where('id', '=', clientId).execute();
}

/** The client with every grant and token issued to it; run it in the caller's transaction. */
export async function deleteClient(db: Executor, clientId: string): Promise<boolean> {
  // Tokens and grants of the client go with it (RFC 7009 §2.1 spirit: nothing it was issued stays usable).
  await db.deleteFrom('oidc_payloads').where('client_id', '=', clientId).execute();
  const result = await db.deleteFrom('oauth_clients').where('id', '=', clientId).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** A new secret replaces the old one at once; returns undefined for unknown or public clients. */
export async function rotateClientSecret(db: Executor, clientId: string): Promise<string | undefined> {
  const secret = newClientSecret();
  const result = await db
    .updateTable('oauth_clients')
    .set({ secret_hash: hashClientSecret(secret), secret_rotated_at: toDbTime(new Date()) })
    .where('id', '=', clientId)
    .where('type', '=', 'confidential')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1 ? secret : undefined;
}

/** The client as oidc-provider's metadata (OIDC Dynamic Client Registration §2 names). */
export async function findClientMetadata(
  db: Kysely<Database>,
  clientId: string,
): Promise<Record<string, unknown> | undefined> {
  const row = await db.selectFrom('oauth_clients').selectAll().where('id', '=', clientId).executeTakeFirst();
  return row ? toMetadata(toRecord({ ...row, owner_email: null }), row.secret_hash ?? undefined) : undefined;
}

export function toMetadata(
  client: NewClient & { clientId: string },
  secretHashValue: string | undefined,
): Record<string, unknown> {
  const signsUsersIn = client.grantTypes.includes('authorization_code');
  return {
    client_id: client.clientId,
    client_name: client.name,
    // The stored value is the secret's hash; compareClientSecret (provider.ts) hashes what is presented.
    ...(secretHashValue ? { client_secret: secretHashValue } : {}),
    token_endpoint_auth_method: client.type === 'confidential' ? 'client_secret_basic' : 'none',
    grant_types: client.grantTypes,
    response_types: signsUsersIn ? ['code'] : [],
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris ?? [],
    scope: [...new Set([...(signsUsersIn ? OIDC_SCOPES : []), ...client.scopes])].join(' '),
    cors_origins: client.corsOrigins,
    first_party: client.firstParty,
    resource_server: client.resourceServer ?? false,
  };
}

function toRecord(row: OAuthClientsTable & { owner_email: string | null }): ClientRecord {
  return {
    clientId: row.id,
    name: row.name,
    type: row.type,
    grantTypes: row.grant_types.split(' ').filter(Boolean) as GrantType[],
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    scopes: row.scopes.split(' ').filter(Boolean),
    corsOrigins: JSON.parse(row.cors_origins) as string[],
    firstParty: Boolean(row.first_party),
    postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
    resourceServer: Boolean(row.resource_server),
    createdAt: new Date(row.created_at).toISOString(),
    secretRotatedAt: row.secret_rotated_at === null ? null : new Date(row.secret_rotated_at).toISOString(),
    ownerId: row.owner_id,
    ownerEmail: row.owner_email,
  };
}
