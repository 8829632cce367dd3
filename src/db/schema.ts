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

interface OrderStatusChangesTable {
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
  /** JSON array of role names (docs/security.md, "Roles"), e.g. ["admin"]. */
  roles: string;
  disabled_at: DbTime | null;
}

export interface AuditLogTable {
  seq: Generated<number>;
  id: string;
  occurred_at: DbTime;
  actor_type: 'user' | 'client' | 'cli' | 'system' | 'anonymous';
  actor_id: string;
  action: string;
  target_type: string | null;
  target_id: string | null;
  outcome: 'success' | 'failure';
  request_id: string | null;
  source_address: string | null;
  /** JSON object of plain facts (names, counts, scopes); never a secret, password or token. */
  details: string;
  /** The chain (migration 0017, audit-chain.ts): the previous entry's hash, and this entry's. */
  prev_hash: string | null;
  hash: string | null;
}

/** The settings every instance must share, as first recorded (migration 0020, src/db/cluster-settings.ts). */
export interface ClusterSettingsTable {
  name: string;
  value: string;
  /** 0: derived from HOST and PORT rather than set (PUBLIC_URL, AUTH_ISSUER, API_RESOURCE). */
  explicit: number;
  recorded_at: DbTime;
}

/** Where each relay of the audit trail has got to (migration 0018, src/webhooks/outbox/audit-relay.ts). */
export interface AuditStreamTable {
  name: string;
  /** The last audit_log.seq turned into events; bigint comes back from pg as a string. */
  last_seq: number | string;
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
  post_logout_redirect_uris: string; // JSON array (migration 0005)
  resource_server: number; // 1: may introspect every access token (migration 0006)
  owner_id: string | null; // users.id, the client's owner (migration 0009); SET NULL when the user goes
}

/** One-time links to the integrator portal (migration 0009): only the token's SHA-256 is stored. */
export interface WebhookPortalLinksTable {
  token_hash: string;
  /** `pl_…` (migration 0014); null only in a row no code writes any more. */
  id: string | null;
  client_id: string;
  /** The customer the link is for (migration 0014); null: the client's own staff. */
  customer_id: string | null;
  created_at: DbTime;
  expires_at: DbTime;
  used_at: DbTime | null;
  revoked_at: DbTime | null;
}

interface OidcPayloadsTable {
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

interface SigningKeysTable {
  kid: string;
  use: 'jws' | 'cookie';
  alg: string;
  material: string;
  created_at: DbTime;
  /** Published from its creation, signing from this instant (null: from its creation). */
  activates_at: DbTime | null;
  /** Signing until this instant (which may still be ahead), then only published. */
  retired_at: DbTime | null;
}

interface LoginThrottleTable {
  key: string;
  failures: number;
  blocked_until: DbTime;
  updated_at: DbTime;
}

export interface WebhookEndpointsTable {
  id: string;
  owner: string;
  url: string;
  description: string;
  event_types: string;
  enabled: number;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: DbTime | null;
  failing_since: DbTime | null;
  created_at: DbTime;
  updated_at: DbTime;
  /** The customer the endpoint belongs to (migration 0014); null: the client's own. */
  customer_id: string | null;
}

export interface WebhookEventsTable {
  seq: Generated<number>;
  id: string;
  type: string;
  occurred_at: DbTime;
  data: string;
  owner: string | null;
  customer_id: string | null;
  order_id: number | null;
  /** PostgreSQL only (xid8, read as text): the writing transaction. */
  tx_id: Generated<string>;
}

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  endpoint_id: string;
  state: 'pending' | 'succeeded' | 'failed';
  attempt_count: number;
  retry_index: number;
  next_attempt_at: DbTime;
  lease_owner: string | null;
  lease_until: DbTime | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: DbTime;
  updated_at: DbTime;
}

interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: string;
  attempt: number;
  started_at: DbTime;
  duration_ms: number;
  status_code: number | null;
  error_kind: string | null;
  error_detail: string | null;
  response_excerpt: string | null;
}

/** The console's server-side sessions (migration 0008); `tokens` is sealed, `id_hash` is SHA-256 of the cookie. */
export interface ConsoleSessionsTable {
  id_hash: string;
  user_id: string;
  name: string;
  email: string;
  scope: string;
  tokens: string;
  access_expires_at: DbTime;
  created_at: DbTime;
  expires_at: DbTime;
  /** Migration 0015: when the session was last used (null: its creation), for the idle timeout. */
  last_seen_at: DbTime | null;
}

/** The integrator portal's sessions (migration 0012); `token` is sealed, `id_hash` is SHA-256 of the cookie. */
export interface ConsolePortalSessionsTable {
  id_hash: string;
  client_id: string;
  client_name: string;
  via: string;
  console_session_hash: string | null;
  scope: string;
  token: string;
  access_expires_at: DbTime;
  created_at: DbTime;
  expires_at: DbTime;
  /** `ps_…` (migration 0014). */
  id: string | null;
  link_id: string | null;
  customer_id: string | null;
}

/** Tokens the built-in authorization server issued, per UTC hour and grant type (migration 0010). */
interface TokenStatsTable {
  hour: DbTime;
  grant_type: string;
  count: number | string; // bigint on PostgreSQL: pg returns it as text
}

/** Initial access tokens for dynamic registration (migration 0016); `token_hash` is the token's SHA-256. */
export interface RegistrationTokensTable {
  id: string;
  token_hash: string;
  scope: string;
  max_uses: number;
  use_count: number;
  description: string | null;
  created_by: string;
  created_at: DbTime;
  expires_at: DbTime;
  revoked_at: DbTime | null;
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
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  audit_log: AuditLogTable;
  audit_stream: AuditStreamTable;
  cluster_settings: ClusterSettingsTable;
  token_stats: TokenStatsTable;
  console_sessions: ConsoleSessionsTable;
  console_portal_sessions: ConsolePortalSessionsTable;
  webhook_portal_links: WebhookPortalLinksTable;
  registration_tokens: RegistrationTokensTable;
}
