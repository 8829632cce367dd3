// buildApp(config): the whole service as a Fastify instance. It never listens: main.ts does, and
// tests listen on port 0. Plugin order matters and is spelled out here once.
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { hostForUrl, type Config } from './config/config.ts';
import { databaseOptions, openDatabase, type DatabaseHandle } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { checkClusterSettings } from './db/cluster-settings.ts';
import { decorateAuth, registerScopeCheck } from './http/bearer/auth.ts';
import { registerErrorHandler } from './http/problems/errors.ts';
import { registerHealth } from './http/ops/health.ts';
import { createRedis, redisHealth } from './http/rate-limit/redis.ts';
import { purgeExpiredKeys } from './idempotency/idempotency.ts';
import { registerJsonBody } from './http/admission/json-body.ts';
import { clientErrorHandler, frameworkErrors, hostCheck, registerConnectAnswer } from './http/problems/malformed.ts';
import { registerNotFound } from './http/problems/not-found.ts';
import { overloadGuard } from './http/admission/overload.ts';
import { registerMetricsListener, registerMetricsRoute, requestDurationObserver } from './http/ops/metrics.ts';
import { metricsAccess } from './http/ops/metrics-access.ts';
import { serializeRequest } from './http/ops/request-log.ts';
import { registerCors } from './http/admission/cors.ts';
import { countDatabaseErrors } from './http/problems/outage.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { deliveryBacklog } from './webhooks/store/backlog.repository.ts';
import { ADMIN_FEATURE, ADMIN_SCOPE_ROLES, ADMIN_SCOPES } from './operator/admin.feature.ts';
import { registerAdmin } from './operator/plugin.ts';
import { registerConsole } from './console/plugin.ts';
import { startAuditRetention } from './audit/retention.ts';
import { capConnections } from './http/admission/connections.ts';
import { registerOpenApi } from './http/representation/openapi.ts';
import { registerOrigin, requestIdGenerator, requestIdHeader } from './http/admission/origin.ts';
import { compileTrust } from './http/admission/forwarded.ts';
import { createRateLimiter } from './http/rate-limit/rate-limit.ts';
import { createAttemptLimiter, type AttemptLimiter } from './http/rate-limit/attempt-limit.ts';
import { registrationPolicyOf } from './auth-server/clients/registration-policy.ts';
import { registerAdmission, registerResponseHooks, type AdmissionStep } from './http/admission/request-pipeline.ts';
import { registerRouteGuard } from './http/bearer/route-guard.ts';
import { securityHeaders } from './http/admission/security-headers.ts';
import { createDrain } from './http/ops/shutdown.ts';
import { StartUpResources } from './http/ops/start-up.ts';
import { createTokenVerifier } from './http/bearer/token-verifier.ts';
import { createAccountStates } from './auth-server/identity/account-states.ts';
import { validatorCompiler } from './http/problems/validation.ts';
import { ordersRoutes } from './orders/orders.routes.ts';
import { registerWebhooks } from './webhooks/plugin.ts';
import { registerAuthServer } from './auth-server/plugin.ts';
import { signingAlgorithms } from './auth-server/tokens/keys.ts';
import type { ProviderHolder } from './auth-server/provider/provider-holder.ts';
import type { ResourceDefinition } from './auth-server/provider/scopes.ts';
import type { FeatureContribution } from './http/feature.ts';
import { ORDERS_FEATURE, ORDERS_SCOPES } from './orders/orders.feature.ts';
import { webhooksFeature, WEBHOOKS_SCOPES } from './webhooks/webhooks.feature.ts';
import { registerResourceMetadata, resourceMetadataUrl } from './http/bearer/resource-metadata.ts';

declare module 'fastify' {
  interface FastifyInstance {
    database: DatabaseHandle;
    /** The built-in authorization server, when enabled. */
    authServer: ProviderHolder | undefined;
  }
}

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

/** Every scope of the resource API, from the features that require them → the words the consent page shows. */
export const API_SCOPES: Readonly<Record<string, string>> = { ...ORDERS_SCOPES, ...WEBHOOKS_SCOPES, ...ADMIN_SCOPES };

/** What each feature brings to the shared layers (http/feature.ts): problem types, OpenAPI prose, PATCH media types. */
function features(config: Readonly<Config>): FeatureContribution[] {
  return [ORDERS_FEATURE, webhooksFeature(config.webhookHeaderName), ADMIN_FEATURE];
}

/** What the console asks for: the user's identity, and the admin and webhook scopes their roles allow. */
function consoleScopes(): string[] {
  return ['openid', 'profile', 'email', ...Object.keys(ADMIN_SCOPES), ...Object.keys(WEBHOOKS_SCOPES)];
}

/** The resource servers (RFC 8707) tokens are issued for: the API, with every scope of its features. */
function resourceDefinitions(apiResource: string): ResourceDefinition[] {
  return [{ uri: apiResource, scopes: Object.keys(API_SCOPES) }];
}
const REDIS_CONNECT_WAIT_MS = 3000;

/**
 * Without an offline queue, a command sent before Redis is connected fails and the request is counted
 * only in this instance's memory: wait for the connection (or its first failure, or a few seconds)
 * before serving, so an instance that just started shares counts from its first request.
 */
function firstConnection(redis: Redis): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      redis.off('ready', done);
      redis.off('error', done);
      resolve();
    };
    const timer = setTimeout(done, REDIS_CONNECT_WAIT_MS);
    redis.once('ready', done);
    redis.once('error', done);
  });
}

/** `logStream`: where the log lines go instead of stdout (tests read what the request log says). */
export interface BuildOptions {
  logger?: boolean;
  logStream?: { write(line: string): void };
}

export async function buildApp(config: Readonly<Config>, options: BuildOptions = {}): Promise<FastifyInstance> {
  const database = openDatabase(config.databaseUrl, databaseOptions(config));
  const opened = new StartUpResources();
  opened.add('the database pool', () => database.db.destroy());
  try {
    return await assembleApp(config, database, options, opened);
  } catch (err) {
    // A refused start (a wrong key, a failed migration, an unreadable file) closes what it opened, so
    // the process ends instead of idling on the pool or the Redis connection (http/ops/start-up.ts).
    await opened.closeAll();
    throw err;
  }
}

/** How often Node looks for connections past HEADERS_TIMEOUT or REQUEST_TIMEOUT. */
const CONNECTION_CHECK_INTERVAL_MS = 1000;

async function assembleApp(
  config: Readonly<Config>,
  database: DatabaseHandle,
  options: BuildOptions,
  opened: StartUpResources,
): Promise<FastifyInstance> {
  await migrateToLatest(database);
  // Before anything signs or verifies: an instance that disagrees with the cluster refuses to start.
  await checkClusterSettings(database.db, config);
  const composed = features(config);
  const patchMediaTypes = composed.flatMap((f) => f.patchMediaTypes ?? []);
  const trust = compileTrust(config.trustProxy);
  const app = Fastify({
    logger:
      options.logger === false
        ? false
        : {
            level: config.logLevel,
            redact: ['req.headers.authorization', 'req.headers.cookie'],
            serializers: { req: serializeRequest },
            ...(options.logStream && { stream: options.logStream }),
          },
    genReqId: requestIdGenerator(trust),
    requestIdHeader: false,
    bodyLimit: config.bodyLimitBytes,
    // Both answered by registerShutdownResponses and registerHostCheck, as problem+json.
    return503OnClosing: false,
    // The timeouts that end idle and slow connections (docs/operations/failure-behaviour.md, "Connections").
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    http: {
      requireHostHeader: false,
      headersTimeout: config.headersTimeoutMs,
      // Node checks the header and request timeouts on this timer (30 s by default): a silent connection would live
      // up to HEADERS_TIMEOUT + 30 s.
      connectionsCheckingInterval: CONNECTION_CHECK_INTERVAL_MS,
    },
    clientErrorHandler,
    frameworkErrors,
    routerOptions: { maxParamLength: 200 },
  });
  opened.add('the Fastify instance', () => app.close());
  capConnections(app.server, config.maxConnections, app.log);
  app.decorate('database', database);
  const metrics = createMetrics({ defaultMetrics: config.metricsListener !== 'off' });
  app.decorate('metrics', metrics);
  countDatabaseErrors(app, metrics);
  app.setValidatorCompiler(validatorCompiler);
  registerErrorHandler(app, patchMediaTypes); // first, or plugins keep Fastify's default error format
  registerNotFound(app);
  registerOrigin(app, {
    trustProxy: config.trustProxy,
    publicUrl: config.publicUrl,
    fallbackHost: `${hostForUrl(config.host)}:${config.port}`,
  });
  registerConnectAnswer(app);
  registerJsonBody(app, patchMediaTypes);
  const drain = createDrain(app);
  registerResponseHooks(app, drain, config.metricsListener !== 'off' ? requestDurationObserver(metrics) : undefined);
  // One onRequest hook for what every request goes through, in this order (http/admission/request-pipeline.ts):
  // the request id first, draining before anything else runs, then Host, security headers, overload.
  const admission: AdmissionStep[] = [
    requestIdHeader,
    drain.admit,
    hostCheck,
    securityHeaders({ https: Boolean(config.publicUrl?.startsWith('https://')) }),
  ];
  const overload = overloadGuard(app, config.maxEventLoopDelayMs);
  if (config.corsOrigins.length === 0) {
    registerAdmission(app, overload ? [...admission, overload] : admission);
  } else {
    // CORS answers preflights and decorates responses before the overload guard may refuse them.
    registerAdmission(app, admission);
    await registerCors(app, config);
    if (overload) registerAdmission(app, [overload]);
  }
  // Before the authorization server: its endpoint limits count in the same Redis as the API's.
  const redis = config.redisUrl ? createRedis(config.redisUrl, config.redisTimeoutMs) : undefined;
  if (redis) opened.add('the Redis client', () => redis.disconnect());
  redis?.on('error', (err) => app.log.warn({ err }, 'redis connection error'));
  if (redis) await firstConnection(redis);
  const endpointLimiter = createAttemptLimiter(
    {
      max: config.oauthRateLimitMax,
      failures: config.oauthRateLimitFailures,
      windowMs: config.oauthRateLimitWindowMs,
      redis,
    },
    app.log,
    () => metrics.rateLimitRefusals.inc(),
  );
  const authServer = config.authServerEnabled
    ? await registerAuthServerFor(app, config, database, endpointLimiter)
    : undefined;
  // The API trusts its issuer by issuer + JWKS like any resource server; when that issuer is the
  // built-in one, the published keys are read in process rather than fetched over HTTP from ourselves.
  const ownIssuer = authServer && config.authIssuer === config.oauthIssuer;
  app.decorate('authServer', authServer);
  authServer?.observeTokens((grantType) => metrics.tokenIssued(grantType));

  decorateAuth(app);
  const verifier = createTokenVerifier({
    issuer: config.authIssuer,
    audience: config.apiResource,
    algorithms: config.authAlgorithms,
    clockToleranceSeconds: config.authClockToleranceSeconds,
    cacheSize: config.authTokenCacheSize,
    jwksFile: config.authJwksFile,
    jwksUrl: config.authJwksUrl,
    localJwks: ownIssuer ? () => authServer.publicJwks() : undefined,
    // A token signed with a key another instance loaded first: reread ours once (rate limited) before a 401.
    localJwksReload: ownIssuer ? authServer.unknownKey : undefined,
    remoteKeys: {
      onStateChange: (state, err) => {
        if (state === 'failing')
          app.log.warn(
            { err },
            'token issuer keys could not be fetched; requests needing them get 503 until a fetch succeeds',
          );
        else app.log.info('token issuer keys fetched again');
      },
    },
  });
  const limiter = createRateLimiter(
    { max: config.rateLimitMax, windowSeconds: config.rateLimitWindowSeconds, redis },
    app.log,
    () => metrics.rateLimitRefusals.inc(),
  );
  // Every route registered from here on authenticates and counts its caller in one hook of its own.
  registerRouteGuard(app, verifier, limiter);
  // Tokens of our own users: their roles and disabled state now, not only when the token was issued.
  const accounts = ownIssuer
    ? createAccountStates({ db: database.db, scopeRoles: ADMIN_SCOPE_ROLES, ttlMs: config.accountCheckCacheMs })
    : undefined;
  registerScopeCheck(app, verifier, {
    resourceMetadataUrl: resourceMetadataUrl(config.apiResource),
    accountCheck: accounts?.check,
  });
  // Before the routes it documents: @fastify/swagger sees only routes added after it (the resource metadata too).
  await registerOpenApi(app, composed);
  registerResourceMetadata(app, {
    resource: config.apiResource,
    authorizationServers: [config.authIssuer],
    scopes: Object.keys(API_SCOPES),
  });

  registerHealth(
    app,
    database,
    { redis: redis && (() => redisHealth(redis)) },
    { signingKeys: authServer && (async () => signingKeysState(authServer, config.accessTokenAlg)) },
  );
  const orderEvents = await registerWebhooks(app, config, database);
  exposeMetrics(app, config, metrics);
  await registerAdmin(app, {
    config,
    database,
    authServer,
    apiScopes: Object.keys(API_SCOPES),
    onUserChange: accounts?.forget,
  });
  // The console signs in through the built-in authorization server, whose tokens the API must trust
  // (docs/guides/portal.md).
  if (authServer && ownIssuer) await registerConsole(app, { config, database, scopes: consoleScopes() });
  await app.register(ordersRoutes, {
    db: database.db,
    events: orderEvents,
    idempotency: {
      ttlSeconds: config.idempotencyKeyTtlSeconds,
      lockSeconds: config.idempotencyLockSeconds,
      singleWriter: database.dialect === 'sqlite',
    },
  });

  const purge = setInterval(() => {
    purgeExpiredKeys(database.db, new Date()).catch((err) => app.log.warn({ err }, 'idempotency key purge failed'));
  }, PURGE_INTERVAL_MS).unref();
  const auditRetention = startAuditRetention(database.db, config.auditRetentionMs, (err) =>
    app.log.warn({ err }, 'audit trail retention purge failed'),
  );
  app.addHook('onClose', async () => {
    clearInterval(purge);
    await auditRetention.stop();
    redis?.disconnect();
    await database.db.destroy();
  });
  return app;
}

/** docs/reference/metrics.md: the webhook numbers, then /metrics where METRICS_PORT says. */
function exposeMetrics(app: FastifyInstance, config: Readonly<Config>, metrics: Metrics): void {
  app.webhooks.dispatcher?.observeAttempts((result) => metrics.webhookAttempt(result));
  metrics.watchDeliveryBacklog(
    () => deliveryBacklog(app.database.db, new Date()),
    (err) => app.log.warn({ err }, 'the webhook backlog could not be read for the metrics'),
  );
  const where = config.metricsListener;
  const access = metricsAccess({ token: config.metricsToken, allow: config.metricsAllow });
  if (where === 'off') app.decorate('metricsAddress', () => undefined);
  else if (where === 'main') registerMetricsRoute(app, metrics, access);
  else
    registerMetricsListener(app, metrics, {
      host: config.metricsHost,
      port: where,
      access,
      problemBase: () => config.publicUrl ?? `http://${hostForUrl(config.host)}:${listeningPort(app, config)}`,
    });
}

/** The API's port: the one it listens on (PORT=0 picks one), else the configured one. */
function listeningPort(app: FastifyInstance, config: Readonly<Config>): number {
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : config.port;
}

/**
 * Readiness (docs/operations/monitoring.md, "Health"): the authorization server holds a key for every algorithm it
 * signs with.
 */
function signingKeysState(holder: ProviderHolder, accessTokenAlg: string): 'ok' | 'missing' {
  const loaded = new Set(holder.keys.jwks.keys.map((key) => key.alg));
  return signingAlgorithms(accessTokenAlg).every((alg) => loaded.has(alg)) ? 'ok' : 'missing';
}

function registerAuthServerFor(
  app: FastifyInstance,
  config: Readonly<Config>,
  database: DatabaseHandle,
  endpointLimiter: AttemptLimiter,
): Promise<ProviderHolder> {
  // Without notifications only the poll publishes a rotation (docs/operations/scaling-out.md, "Rotating signing keys").
  if (
    database.dialect === 'sqlite' &&
    config.keyRotationDelayMs > 0 &&
    config.keyRotationDelayMs <= config.keyReloadIntervalMs
  )
    app.log.warn(
      'KEY_ROTATION_DELAY is not longer than KEY_RELOAD_INTERVAL: on SQLite another process serving tokens may sign with rotated keys before this one has loaded them',
    );
  return registerAuthServer(app, {
    db: database.db,
    issuer: config.oauthIssuer,
    resources: resourceDefinitions(config.apiResource),
    scopeDescriptions: API_SCOPES,
    // The admin scopes go to users holding a role that allows them only (docs/security.md, "Roles").
    scopeRoles: ADMIN_SCOPE_ROLES,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    accessTokenAlg: config.accessTokenAlg,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    sessionTtlSeconds: config.sessionTtlSeconds,
    secureCookies: config.oauthIssuer.startsWith('https://'),
    keyEncryptionKey: config.keyEncryptionKey,
    loginMaxFailures: config.loginMaxFailures,
    keyNotificationsUrl: database.dialect === 'postgres' ? config.databaseUrl : undefined,
    keyReloadIntervalMs: config.keyReloadIntervalMs,
    dynamicRegistration: config.dynamicRegistration,
    registrationPolicy: registrationPolicyOf(config, Object.keys(API_SCOPES), Object.keys(ADMIN_SCOPES)),
    endpointLimiter,
  });
}
