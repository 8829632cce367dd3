// The shape of the configuration and of one setting (settings.ts, webhook-settings.ts list them).

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** How long a finished SQLite write waits for others to share its COMMIT (sqlite-group-commit.ts). */
  sqliteGroupCommitWindowMs: number;
  /** How long a SQLite write waits for another process's write lock before a 503. */
  sqliteBusyTimeoutMs: number;
  /** How long a query waits for a PostgreSQL connection, new or pooled, before a 503. */
  databaseConnectTimeoutMs: number;
  /** PostgreSQL statement_timeout; a query unanswered 2 s after it closes its connection (a stalled network). */
  databaseStatementTimeoutMs: number;
  /** PostgreSQL lock_timeout. */
  databaseLockTimeoutMs: number;
  /** PostgreSQL idle_in_transaction_session_timeout. */
  databaseIdleInTransactionTimeoutMs: number;
  /** PostgreSQL: parameterised statements become named prepared statements (database.ts). */
  databasePreparedStatements: boolean;
  publicUrl: string | undefined;
  trustProxy: false | number | string[];
  logLevel: LogLevel;
  authIssuer: string;
  authJwksUrl: string | undefined;
  authJwksFile: string | undefined;
  authAlgorithms: string[];
  authClockToleranceSeconds: number;
  authTokenCacheSize: number;
  apiResource: string;
  authServerEnabled: boolean;
  oauthIssuer: string;
  accessTokenTtlSeconds: number;
  accessTokenAlg: 'ES256' | 'EdDSA' | 'RS256' | 'PS256';
  refreshTokenTtlSeconds: number;
  sessionTtlSeconds: number;
  /** How long a user's roles and disabled state are reused for their token's requests (http/bearer/account-check.ts). */
  accountCheckCacheMs: number;
  consoleIdleTimeoutSeconds: number;
  keyEncryptionKey: Buffer | undefined;
  /** How long rotated signing keys are published before they sign (auth-server/tokens/keys.ts rotateKeys). */
  keyRotationDelayMs: number;
  /** How often each instance rereads the signing keys (auth-server/provider/key-reloader.ts). */
  keyReloadIntervalMs: number;
  loginMaxFailures: number;
  corsOrigins: string[];
  idempotencyKeyTtlSeconds: number;
  idempotencyLockSeconds: number;
  rateLimitMax: number;
  rateLimitWindowSeconds: number;
  redisUrl: string | undefined;
  redisTimeoutMs: number;
  bodyLimitBytes: number;
  maxEventLoopDelayMs: number;
  maxConnections: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  requestTimeoutMs: number;
  shutdownDrainMs: number;
  webhookHeaderName: string;
  webhookTimeoutMs: number;
  webhookRetryScheduleMs: number[];
  webhookRetryAfterCapMs: number;
  webhookDisableAfterMs: number;
  webhookSecretOverlapMs: number;
  webhookSecretKey: Buffer | undefined;
  webhookAllowHttp: boolean;
  webhookAllowedNetworks: string[];
  webhookDispatcher: boolean;
  webhookConcurrency: number;
  webhookEndpointConcurrency: number;
  webhookPollIntervalMs: number;
  eventRetentionMs: number;
  /** How long audit entries are kept (AUDIT_RETENTION). */
  auditRetentionMs: number;
  /** Where /metrics is served: 'main' (the API's port), 'off', or a port of its own (0: any free one). */
  metricsListener: 'main' | 'off' | number;
  /** The bind address of the metrics listener. */
  metricsHost: string;
  /** The bearer token a scrape must send, when set. */
  metricsToken: string | undefined;
  /** Addresses and CIDR ranges allowed to scrape, when set. */
  metricsAllow: string[] | undefined;
  /** RFC 7591 dynamic client registration, gated by initial access tokens; off unless turned on. */
  dynamicRegistration: boolean;
  /** The registration policy (registration-settings.ts); undefined scopes: every API scope but the admin ones. */
  registrationScopes: string[] | undefined;
  registrationGrantTypes: ('authorization_code' | 'refresh_token' | 'client_credentials')[];
  registrationRedirectHosts: string[] | undefined;
  /** The authorization server's endpoint rate limits (registration-settings.ts). */
  oauthRateLimitMax: number;
  oauthRateLimitFailures: number;
  oauthRateLimitWindowMs: number;
}

export type Env = Record<string, string | undefined>;

interface Setting<K extends keyof Config> {
  key: K;
  env: string;
  /** What the setting means, in Markdown: the one text docs/reference/configuration.md shows (reference.ts). */
  doc: string;
  /** undefined: no default, or one computed at load time that the doc explains; "unset" in the reference. */
  default: string | undefined;
  parse: (raw: string, env: Env) => Config[K];
  /** A credential: an error about it never repeats the value (loadConfig). */
  secret?: boolean;
}

export function setting<K extends keyof Config>(s: Setting<K>): Setting<K> {
  return s;
}

/** Asymmetric algorithms only: an HMAC algorithm here would let anyone holding the public key forge tokens. */
export const ALLOWED_JWS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
