// One schema for every setting. Nothing else in the code base reads process.env:
// the service gets a frozen Config, and a bad value stops the boot with a message naming the variable.
import { defaultMaxConnections } from './descriptors.ts';
import { ConfigError } from './parsers.ts';
import { SETTINGS, type Config, type Env } from './settings.ts';

export { ConfigError };

export { ALLOWED_JWS_ALGORITHMS, LOG_LEVELS, SETTINGS, type Config, type LogLevel } from './settings.ts';

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
      const got = s.secret ? '' : ` (got ${JSON.stringify(raw)})`;
      throw new ConfigError(`${s.env}: ${(err as Error).message}${got}`);
    }
  }
  const config = values as Config;
  const base = config.publicUrl ?? `http://${hostForUrl(config.host)}:${config.port}`;
  config.oauthIssuer = `${base}/oauth`;
  config.authIssuer ??= config.oauthIssuer;
  config.apiResource ??= `${base}/api`;
  config.maxConnections ??= defaultMaxConnections();
  const retryWindowMs = config.webhookRetryScheduleMs.reduce((sum, ms) => sum + ms, 0);
  if (config.eventRetentionMs < retryWindowMs) {
    throw new ConfigError(
      `EVENT_RETENTION: must be at least the retry window of WEBHOOK_RETRY_SCHEDULE (${Math.ceil(retryWindowMs / 3_600_000)} h), or events would be purged while still being retried`,
    );
  }
  if (config.headersTimeoutMs > config.requestTimeoutMs)
    throw new ConfigError('HEADERS_TIMEOUT: must not be longer than REQUEST_TIMEOUT, which covers the header too');
  checkMetricsExposure(config);
  return Object.freeze(config);
}

/**
 * /metrics on the API port is reachable by whoever reaches the API: it must then be guarded
 * (docs/operations/monitoring.md, "Metrics").
 */
function checkMetricsExposure(config: Config): void {
  if (config.metricsListener === 'main' && !config.metricsToken && !config.metricsAllow)
    throw new ConfigError(
      'METRICS_PORT: main serves /metrics on the API port, which needs METRICS_TOKEN or METRICS_ALLOW (or both); or keep the metrics on a port of their own (the default, 9464 on loopback) or turn them off',
    );
}

/** The listen address as it can appear in a URL authority (wildcards become loopback). */
export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
