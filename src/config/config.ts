// One schema for every setting. Nothing else in the code base reads process.env:
// the service gets a frozen Config, and a bad value stops the boot with a message naming the variable.
import { defaultMaxConnections } from './descriptors.ts';
import { parsers, ConfigError } from './parsers.ts';

export { ConfigError };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  sqliteSynchronous: 'NORMAL' | 'FULL';
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
  keyEncryptionKey: Buffer | undefined;
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
  /** PUBLIC_URL, or http://HOST:PORT: the base of absolute URLs built outside a request (event payloads). */
  baseUrl: string;
}

type Env = Record<string, string | undefined>;

interface Setting<K extends keyof Config> {
  key: K;
  env: string;
  doc: string;
  default: string | undefined;
  parse: (raw: string, env: Env) => Config[K];
}

function setting<K extends keyof Config>(s: Setting<K>): Setting<K> {
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

export const SETTINGS = [
  setting({ key: 'host', env: 'HOST', default: '127.0.0.1', doc: 'Address to listen on.', parse: parsers.host }),
  setting({
    key: 'port',
    env: 'PORT',
    default: '3000',
    doc: 'TCP port (0 picks a free one).',
    parse: parsers.integer(0, 65535),
  }),
  setting({
    key: 'databaseUrl',
    env: 'DATABASE_URL',
    default: 'sqlite:./data/signet.db',
    doc: '`sqlite:<file>` (embedded, created on first start) or `postgres://user@host:port/db`.',
    parse: parsers.databaseUrl,
  }),
  setting({
    key: 'sqliteSynchronous',
    env: 'SQLITE_SYNCHRONOUS',
    default: 'FULL',
    doc: 'SQLite durability: `FULL` syncs every commit to disk (survives power loss); `NORMAL` (WAL) survives process crashes but may lose the last commits on power loss, and is faster.',
    parse: parsers.oneOf(['NORMAL', 'FULL'] as const),
  }),
  setting({
    key: 'sqliteBusyTimeoutMs',
    env: 'SQLITE_BUSY_TIMEOUT',
    default: '3s',
    doc: 'SQLite: how long a write waits for the write lock another process holds (`signet migrate`, an admin command, a `signet dispatcher`, a backup) before it is answered 503 with Retry-After. The wait does not block other requests; writes queued behind one that gave up fail at once while the lock stays held.',
    parse: parsers.duration(0, 60_000),
  }),
  setting({
    key: 'databaseConnectTimeoutMs',
    env: 'DATABASE_CONNECT_TIMEOUT',
    default: '5s',
    doc: 'PostgreSQL: how long a query waits for a connection (a new one, or a free one of the pool of 10) before it is answered 503 with Retry-After.',
    parse: parsers.duration(100, 120_000),
  }),
  setting({
    key: 'databaseStatementTimeoutMs',
    env: 'DATABASE_STATEMENT_TIMEOUT',
    default: '5s',
    doc: 'PostgreSQL `statement_timeout` of every connection: a longer statement is cancelled and the request answered 503 with Retry-After. A query with no answer at all 2 s after it (a stalled network or server) closes its connection and is answered 503 too. Migrations run without it.',
    parse: parsers.duration(100, 3_600_000),
  }),
  setting({
    key: 'databaseLockTimeoutMs',
    env: 'DATABASE_LOCK_TIMEOUT',
    default: '3s',
    doc: 'PostgreSQL `lock_timeout`: a statement waiting longer for a lock (a table locked by a maintenance job, a row held by a stuck transaction) fails and the request is answered 503 with Retry-After.',
    parse: parsers.duration(100, 3_600_000),
  }),
  setting({
    key: 'databaseIdleInTransactionTimeoutMs',
    env: 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT',
    default: '5s',
    doc: 'PostgreSQL `idle_in_transaction_session_timeout`: the server ends a session whose transaction waits this long between statements (a frozen or cut-off instance), releasing its locks for everyone else.',
    parse: parsers.duration(100, 3_600_000),
  }),
  setting({
    key: 'publicUrl',
    env: 'PUBLIC_URL',
    default: undefined,
    doc: 'Externally visible base URL, scheme and host only (e.g. `https://api.example.com`; a path is refused). When unset, absolute URLs follow the Host header or trusted forwarding headers.',
    parse: parsers.baseUrl,
  }),
  setting({
    key: 'trustProxy',
    env: 'TRUST_PROXY',
    default: 'false',
    doc: 'Which peers may set `Forwarded`/`X-Forwarded-*`/`X-Request-Id`: `false`, a hop count, or a comma list of addresses/CIDRs (`loopback`, `10.0.0.0/8`).',
    parse: parsers.trustProxy,
  }),
  setting({
    key: 'logLevel',
    env: 'LOG_LEVEL',
    default: 'info',
    doc: `One of ${LOG_LEVELS.join(', ')}.`,
    parse: parsers.oneOf(LOG_LEVELS),
  }),
  setting({
    key: 'authIssuer',
    env: 'AUTH_ISSUER',
    default: undefined,
    doc: 'Issuer whose access tokens the API trusts (`iss`). Default: `<PUBLIC_URL or http://HOST:PORT>/oauth`.',
    parse: parsers.url,
  }),
  setting({
    key: 'authJwksUrl',
    env: 'AUTH_JWKS_URL',
    default: undefined,
    doc: "JWKS URL of the issuer. Default: the `jwks_uri` from the issuer's discovery document.",
    parse: parsers.url,
  }),
  setting({
    key: 'authJwksFile',
    env: 'AUTH_JWKS_FILE',
    default: undefined,
    doc: 'A local JWKS file (offline use and tests); wins over the URL settings.',
    parse: parsers.text,
  }),
  setting({
    key: 'authAlgorithms',
    env: 'AUTH_ALGORITHMS',
    default: 'RS256,PS256,ES256,EdDSA',
    doc: 'Allowed JWS algorithms for access tokens (asymmetric only).',
    parse: parsers.algorithmList(ALLOWED_JWS_ALGORITHMS),
  }),
  setting({
    key: 'authClockToleranceSeconds',
    env: 'AUTH_CLOCK_TOLERANCE_SECONDS',
    default: '5',
    doc: 'Leeway for `exp`/`nbf`/`iat`.',
    parse: parsers.integer(0, 300),
  }),
  setting({
    key: 'authTokenCacheSize',
    env: 'AUTH_TOKEN_CACHE_SIZE',
    default: '10000',
    doc: 'Verified tokens kept in memory (0 disables the cache); an entry never outlives its token.',
    parse: parsers.integer(0, 1_000_000),
  }),
  setting({
    key: 'apiResource',
    env: 'API_RESOURCE',
    default: undefined,
    doc: 'Resource identifier of the API, the `aud` its tokens must carry. Default: `<PUBLIC_URL or http://HOST:PORT>/api`.',
    parse: parsers.url,
  }),
  setting({
    key: 'authServerEnabled',
    env: 'AUTH_SERVER_ENABLED',
    default: 'true',
    doc: 'Serve the built-in authorization server under `/oauth` (`false` when the API trusts another issuer).',
    parse: parsers.boolean,
  }),
  setting({
    key: 'accessTokenTtlSeconds',
    env: 'ACCESS_TOKEN_TTL_SECONDS',
    default: '900',
    doc: 'Lifetime of issued access tokens, 900–3600 (the contract recommends 15 to 60 minutes).',
    parse: parsers.integer(900, 3600),
  }),
  setting({
    key: 'accessTokenAlg',
    env: 'ACCESS_TOKEN_ALG',
    default: 'ES256',
    doc: 'JWS algorithm of issued access tokens: `ES256` (default; fast to sign, widely supported), `EdDSA`, `RS256` or `PS256`. ID tokens use RS256 unless a client registers otherwise.',
    parse: parsers.oneOf(['ES256', 'EdDSA', 'RS256', 'PS256'] as const),
  }),
  setting({
    key: 'refreshTokenTtlSeconds',
    env: 'REFRESH_TOKEN_TTL_SECONDS',
    default: '1209600',
    doc: 'Lifetime of a refresh token (each rotation issues a new one with the same remaining family lifetime).',
    parse: parsers.integer(3600, 365 * 86400),
  }),
  setting({
    key: 'sessionTtlSeconds',
    env: 'SESSION_TTL_SECONDS',
    default: '1209600',
    doc: 'Lifetime of a login session at the authorization server.',
    parse: parsers.integer(300, 365 * 86400),
  }),
  setting({
    key: 'keyEncryptionKey',
    env: 'KEY_ENCRYPTION_KEY',
    default: undefined,
    doc: 'Base64url of 32 random bytes; when set, signing keys and cookie secrets are stored AES-256-GCM encrypted. Generate one with `npx signet keys generate-kek`.',
    parse: parsers.aesKey,
  }),
  setting({
    key: 'loginMaxFailures',
    env: 'LOGIN_MAX_FAILURES',
    default: '5',
    doc: 'Failed logins per account or address before each further attempt must wait (1 s, doubling, at most 15 min).',
    parse: parsers.integer(1, 1000),
  }),
  setting({
    key: 'corsOrigins',
    env: 'CORS_ORIGINS',
    default: '',
    doc: 'Comma list of browser origins allowed to call the API (`https://app.example.com`).',
    parse: parsers.originList,
  }),
  setting({
    key: 'idempotencyKeyTtlSeconds',
    env: 'IDEMPOTENCY_KEY_TTL_SECONDS',
    default: '86400',
    doc: 'How long an Idempotency-Key and its stored response are kept.',
    parse: parsers.integer(60, 30 * 86400),
  }),
  setting({
    key: 'idempotencyLockSeconds',
    env: 'IDEMPOTENCY_LOCK_SECONDS',
    default: '30',
    doc: 'After this long an in-flight key whose request never finished (crash) may be taken over.',
    parse: parsers.integer(1, 3600),
  }),
  setting({
    key: 'rateLimitMax',
    env: 'RATE_LIMIT_MAX',
    default: '1200',
    doc: 'Requests per caller (token subject, else client address) per window.',
    parse: parsers.integer(1, 100_000_000),
  }),
  setting({
    key: 'rateLimitWindowSeconds',
    env: 'RATE_LIMIT_WINDOW_SECONDS',
    default: '60',
    doc: 'Rate-limit window.',
    parse: parsers.integer(1, 86400),
  }),
  setting({
    key: 'redisUrl',
    env: 'REDIS_URL',
    default: undefined,
    doc: 'When set, rate-limit counters live in Redis so every instance shares them.',
    parse: parsers.redisUrl,
  }),
  setting({
    key: 'redisTimeoutMs',
    env: 'REDIS_TIMEOUT',
    default: '1s',
    doc: 'Longest wait for Redis to connect or answer one command; past it, rate limits fall back to per-instance counters in memory until Redis answers again.',
    parse: parsers.duration(50, 30_000),
  }),
  setting({
    key: 'bodyLimitBytes',
    env: 'BODY_LIMIT_BYTES',
    default: '65536',
    doc: 'Largest accepted request body (413 above).',
    parse: parsers.integer(1024, 10 * 1024 * 1024),
  }),
  setting({
    key: 'maxEventLoopDelayMs',
    env: 'MAX_EVENT_LOOP_DELAY_MS',
    default: '1000',
    doc: 'Event-loop delay above which requests get 503 with Retry-After (0 disables).',
    parse: parsers.integer(0, 60_000),
  }),
  setting({
    key: 'maxConnections',
    env: 'MAX_CONNECTIONS',
    default: undefined,
    doc: 'Open client connections at most; one more is closed as soon as it is accepted. Default: 80 % of the open-file limit (`ulimit -n`), within 64 and 65,536, leaving descriptors for the database, Redis and webhooks.',
    parse: parsers.integer(1, 10_000_000),
  }),
  setting({
    key: 'shutdownDrainMs',
    env: 'SHUTDOWN_DRAIN',
    default: '2s',
    doc: 'On SIGTERM, how long the listener stays open answering every new request 503 (and `/readyz` 503) before it closes, so load balancers stop routing and clients get an answer rather than a reset. SIGINT skips it.',
    parse: parsers.duration(0, 60_000),
  }),
  setting({
    key: 'webhookHeaderName',
    env: 'WEBHOOK_HEADER_NAME',
    default: 'Service',
    doc: 'The producer word in the webhook headers: `X-<name>-Signature-256`, `X-<name>-Delivery`, `X-<name>-Event`.',
    parse: parsers.headerWord,
  }),
  setting({
    key: 'webhookTimeoutMs',
    env: 'WEBHOOK_TIMEOUT',
    default: '15s',
    doc: 'How long one delivery attempt may take, from connect to response headers and body (5s–30s).',
    parse: parsers.duration(5000, 30_000),
  }),
  setting({
    key: 'webhookRetryScheduleMs',
    env: 'WEBHOOK_RETRY_SCHEDULE',
    default: '0s,5s,5m,30m,2h,5h,10h,10h',
    doc: 'Delay before each attempt (the first is normally `0s`); each delay gets ±20 % jitter. After the last attempt fails, the delivery is `failed`.',
    parse: parsers.durationList(0, 7 * 86_400_000, 20),
  }),
  setting({
    key: 'webhookRetryAfterCapMs',
    env: 'WEBHOOK_RETRY_AFTER_MAX',
    default: '1h',
    doc: 'Longest `Retry-After` (on 429 and 503) that is honoured; a longer one waits this long.',
    parse: parsers.duration(1000, 86_400_000),
  }),
  setting({
    key: 'webhookDisableAfterMs',
    env: 'WEBHOOK_DISABLE_AFTER',
    default: '5d',
    doc: 'An endpoint whose every attempt failed for this long is disabled, and a `webhook.endpoint.disabled` event is recorded.',
    parse: parsers.duration(60_000, 90 * 86_400_000),
  }),
  setting({
    key: 'webhookSecretOverlapMs',
    env: 'WEBHOOK_SECRET_OVERLAP',
    default: '24h',
    doc: 'After a secret rotation, how long the previous secret still signs (Standard Webhooks header).',
    parse: parsers.duration(0, 30 * 86_400_000),
  }),
  setting({
    key: 'webhookSecretKey',
    env: 'WEBHOOK_SECRET_KEY',
    default: undefined,
    doc: 'Base64url of 32 random bytes: the AES-256-GCM key that seals webhook secrets at rest. Required with PostgreSQL; with SQLite it defaults to a key generated into `<database file>.webhook-key` (mode 0600).',
    parse: parsers.aesKey,
  }),
  setting({
    key: 'webhookAllowHttp',
    env: 'WEBHOOK_ALLOW_HTTP',
    default: 'false',
    doc: 'Development only: accept `http://` callback URLs.',
    parse: parsers.boolean,
  }),
  setting({
    key: 'webhookAllowedNetworks',
    env: 'WEBHOOK_ALLOWED_NETWORKS',
    default: '',
    doc: 'Addresses or CIDRs (or `loopback`, `private`, `linklocal`, `uniquelocal`) that callbacks may reach although they are not public; everything else non-public is refused.',
    parse: parsers.networkList,
  }),
  setting({
    key: 'webhookDispatcher',
    env: 'WEBHOOK_DISPATCHER',
    default: 'true',
    doc: 'Run the delivery dispatcher inside `signet serve` (`false` when `signet dispatcher` processes do it).',
    parse: parsers.boolean,
  }),
  setting({
    key: 'webhookConcurrency',
    env: 'WEBHOOK_CONCURRENCY',
    default: '64',
    doc: 'Deliveries in flight at once, per dispatcher process.',
    parse: parsers.integer(1, 10_000),
  }),
  setting({
    key: 'webhookEndpointConcurrency',
    env: 'WEBHOOK_ENDPOINT_CONCURRENCY',
    default: '16',
    doc: 'Deliveries in flight to one endpoint at once, per dispatcher process (a slow endpoint cannot take every slot).',
    parse: parsers.integer(1, 1000),
  }),
  setting({
    key: 'webhookPollIntervalMs',
    env: 'WEBHOOK_POLL_INTERVAL',
    default: '1s',
    doc: 'Fallback poll for due deliveries; new events wake the dispatcher at once (in process, and by LISTEN/NOTIFY on PostgreSQL).',
    parse: parsers.duration(50, 60_000),
  }),
  setting({
    key: 'eventRetentionMs',
    env: 'EVENT_RETENTION',
    default: '30d',
    doc: 'How long events (and their delivery log) stay readable at `/api/events`; at least the whole retry schedule.',
    parse: parsers.duration(3_600_000, 3650 * 86_400_000),
  }),
] as const;

/** Reads and validates every setting; throws ConfigError naming the first bad variable. */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  const values: Partial<Record<keyof Config, unknown>> = {};
  for (const s of SETTINGS) {
    // An empty variable (`FOO=` in an env file) means "not set": the default applies.
    const raw = env[s.env] || s.default;
    if (raw === undefined || raw === '') {
      values[s.key] = s.key === 'corsOrigins' || s.key === 'webhookAllowedNetworks' ? [] : undefined;
      continue;
    }
    try {
      values[s.key] = s.parse(raw, env);
    } catch (err) {
      throw new ConfigError(`${s.env}: ${(err as Error).message} (got ${JSON.stringify(raw)})`);
    }
  }
  const config = values as Config;
  const base = config.publicUrl ?? `http://${hostForUrl(config.host)}:${config.port}`;
  config.oauthIssuer = `${base}/oauth`;
  config.authIssuer ??= config.oauthIssuer;
  config.apiResource ??= `${base}/api`;
  config.baseUrl = base;
  config.maxConnections ??= defaultMaxConnections();
  const retryWindowMs = config.webhookRetryScheduleMs.reduce((sum, ms) => sum + ms, 0);
  if (config.eventRetentionMs < retryWindowMs) {
    throw new ConfigError(
      `EVENT_RETENTION: must be at least the retry window of WEBHOOK_RETRY_SCHEDULE (${Math.ceil(retryWindowMs / 3_600_000)} h), or events would be purged while still being retried`,
    );
  }
  return Object.freeze(config);
}

/** The listen address as it can appear in a URL authority (wildcards become loopback). */
export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
