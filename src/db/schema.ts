// Table types as Kysely sees them. Dates cross the boundary through codecs.ts.
import type { Generated } from 'kysely';

export type DbTime = string | Date;

export interface OrdersTable {
  id: Generated<number>;
  customer_id: string;
  total_minor: number;
  currency: string;
  status: string;
  version: number;
  created_at: DbTime;
  updated_at: DbTime;
}

export interface OrderStatusChangesTable {
  id: Generated<number>;
  order_id: number;
  status: string;
  changed_at: DbTime;
}

export interface IdempotencyKeysTable {
  caller: string;
  key: string;
  fingerprint: string;
  state: 'in_flight' | 'done';
  locked_until: DbTime;
  response_status: number | null;
  response_headers: string | null;
  response_body: string | null;
  created_at: DbTime;
  expires_at: DbTime;
}

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  created_at: DbTime;
}

export interface OAuthClientsTable {
  id: string;
  name: string;
  type: 'confidential' | 'public';
  secret_hash: string | null;
  grant_types: string;
  redirect_uris: string;
  scopes: string;
  cors_origins: string;
  first_party: number;
  created_at: DbTime;
  secret_rotated_at: DbTime | null;
}

export interface OidcPayloadsTable {
  model: string;
  id: string;
  payload: string;
  grant_id: string | null;
  client_id: string | null;
  account_id: string | null;
  user_code: string | null;
  uid: string | null;
  expires_at: DbTime | null;
  consumed_at: DbTime | null;
}

export interface SigningKeysTable {
  kid: string;
  use: 'jws' | 'cookie';
  alg: string;
  material: string;
  created_at: DbTime;
  retired_at: DbTime | null;
}

export interface LoginThrottleTable {
  key: string;
  failures: number;
  blocked_until: DbTime;
  updated_at: DbTime;
}

export interface Database {
  orders: OrdersTable;
  order_status_changes: OrderStatusChangesTable;
  idempotency_keys: IdempotencyKeysTable;
  users: UsersTable;
  oauth_clients: OAuthClientsTable;
  oidc_payloads: OidcPayloadsTable;
  signing_keys: SigningKeysTable;
  login_throttle: LoginThrottleTable;
}
