// The webhook settings (README, Configuration: WEBHOOK_*, EVENT_RETENTION), part of SETTINGS (settings.ts).
import { parsers } from './parsers.ts';
import { setting } from './setting.ts';

export const WEBHOOK_SETTINGS = [
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
