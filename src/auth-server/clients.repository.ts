// OAuth clients: created and managed by the CLI, read by oidc-provider through ClientAdapter.
// A confidential client's secret is 256 random bits shown once; only its SHA-256 is stored. A fast hash
// is right here: guessing a 256-bit value is hopeless, so a slow KDF would only tax every token request.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { toDbTime } from '../db/codecs.ts';
import type { Database, OAuthClientsTable } from '../db/schema.ts';

export type ClientType = 'confidential' | 'public';
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
}

export interface ClientRecord extends NewClient {
  clientId: string;
  createdAt: string;
  secretRotatedAt: string | null;
}

export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

function newSecret(): string {
  return `scs_${randomBytes(32).toString('base64url')}`;
}

export async function createClient(
  db: Kysely<Database>,
  client: NewClient,
): Promise<{ record: ClientRecord; clientSecret: string | undefined }> {
  const clientId = `cl_${randomUUID().replaceAll('-', '')}`;
  const clientSecret = client.type === 'confidential' ? newSecret() : undefined;
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
      created_at: toDbTime(new Date()),
      secret_rotated_at: null,
    })
    .execute();
  const record = await findClient(db, clientId);
  if (!record) throw new Error('client vanished after insert');
  return { record, clientSecret };
}

export async function findClient(db: Kysely<Database>, clientId: string): Promise<ClientRecord | undefined> {
  const row = await db.selectFrom('oauth_clients').selectAll().where('id', '=', clientId).executeTakeFirst();
  return row ? toRecord(row) : undefined;
}

export async function listClients(db: Kysely<Database>): Promise<ClientRecord[]> {
  const rows = await db.selectFrom('oauth_clients').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map(toRecord);
}

export async function deleteClient(db: Kysely<Database>, clientId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    // Tokens and grants of the client go with it (RFC 7009 §2.1 spirit: nothing it was issued stays usable).
    await trx.deleteFrom('oidc_payloads').where('client_id', '=', clientId).execute();
    const result = await trx.deleteFrom('oauth_clients').where('id', '=', clientId).executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  });
}

/** A new secret replaces the old one at once; returns undefined for unknown or public clients. */
export async function rotateClientSecret(db: Kysely<Database>, clientId: string): Promise<string | undefined> {
  const secret = newSecret();
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
  return row ? toMetadata(toRecord(row), row.secret_hash ?? undefined) : undefined;
}

function toMetadata(client: ClientRecord, secretHashValue: string | undefined): Record<string, unknown> {
  const signsUsersIn = client.grantTypes.includes('authorization_code');
  return {
    client_id: client.clientId,
    client_name: client.name,
    // The stored value is the secret's hash; compareClientSecret (provider.ts) hashes what is presented.
    ...(secretHashValue ? { client_secret: secretHashValue } : {}),
    token_endpoint_auth_method: client.type === 'confidential' ? 'client_secret_basic' : 'none',
    require_auth_time: true, // ID tokens carry auth_time (OIDC Core §2)
    grant_types: client.grantTypes,
    response_types: signsUsersIn ? ['code'] : [],
    redirect_uris: client.redirectUris,
    scope: [...new Set([...(signsUsersIn ? OIDC_SCOPES : []), ...client.scopes])].join(' '),
    cors_origins: client.corsOrigins,
    first_party: client.firstParty,
  };
}

function toRecord(row: OAuthClientsTable): ClientRecord {
  return {
    clientId: row.id,
    name: row.name,
    type: row.type,
    grantTypes: row.grant_types.split(' ').filter(Boolean) as GrantType[],
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    scopes: row.scopes.split(' ').filter(Boolean),
    corsOrigins: JSON.parse(row.cors_origins) as string[],
    firstParty: Boolean(row.first_party),
    createdAt: new Date(row.created_at).toISOString(),
    secretRotatedAt: row.secret_rotated_at === null ? null : new Date(row.secret_rotated_at).toISOString(),
  };
}
