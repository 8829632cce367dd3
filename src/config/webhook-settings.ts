// The webhook settings (docs/reference/configuration.md: WEBHOOK_*, EVENT_RETENTION), part of SETTINGS (settings.ts).
import { parsers } from './parsers.ts';
import { setting } from './setting.ts';

export const WEBHOOK_SETTINGS = [
  setting({
    key: 'webhookHeaderName',
    env: 'WEBHOOK_HEADER_NAME',
    default: 'Service',
    doc: 'The producer word in the headers: `X-<name>-Signature-256`, `X-<name>-Delivery`, `X-<name>-Event`.',
    parse: parsers.headerWord,
  }),
  setting({
    key: 'webhookTimeoutMs',
    env: 'WEBHOOK_TIMEOUT',
    default: '15s',
    doc: 'One attempt, connect to status line (5s–30s); the reply body is only read for the attempt log, within the same time. Durations take `ms`, `s`, `m`, `h`, `d`.',
    parse: parsers.duration(5000, 30_000),
  }),
  setting({
    key: 'webhookRetryScheduleMs',
    env: 'WEBHOOK_RETRY_SCHEDULE',
    default: '0s,5s,5m,30m,2h,5h,10h,10h',
    doc: 'Delay before each attempt, ±20 % jitter; after the last one the delivery is `failed`. The sum (about 28 h) is the retry window.',
    parse: parsers.durationList(0, 7 * 86_400_000, 20),
  }),
  setting({
    key: 'webhookRetryAfterCapMs',
    env: 'WEBHOOK_RETRY_AFTER_MAX',
    default: '1h',
    doc: 'Longest `Retry-After` (429, 503) honoured.',
    parse: parsers.duration(1000, 86_400_000),
  }),
  setting({
    key: 'webhookDisableAfterMs',
    env: 'WEBHOOK_DISABLE_AFTER',
    default: '5d',
    doc: 'An endpoint failing without a single success for this long is disabled (`webhook.endpoint.disabled`).',
    parse: parsers.duration(60_000, 90 * 86_400_000),
  }),
  setting({
    key: 'webhookSecretOverlapMs',
    env: 'WEBHOOK_SECRET_OVERLAP',
    default: '24h',
    doc: 'After a secret rotation, how long the previous secret still signs.',
    parse: parsers.duration(0, 30 * 86_400_000),
  }),
  setting({
    key: 'webhookSecretKey',
    env: 'WEBHOOK_SECRET_KEY',
    default: undefined,
    doc: '32 random bytes, base64url (`npx signet keys generate-kek`): the AES-256-GCM key sealing webhook secrets at rest. **Required with PostgreSQL.** With SQLite it defaults to a key generated into `<database file>.webhook-key` (mode 0600), outside the database: back the file up with the database. A key is generated only for a database that holds no webhook secret yet; if the file is missing while secrets are stored, or a key (file or variable) does not open them, `signet serve` and `signet dispatcher` refuse to start (exit 1) and name the file and the way out (docs/operations/failure-behaviour.md, "The webhook key").',
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
    doc: 'Addresses, CIDRs or `loopback`, `private`, `linklocal`, `uniquelocal` that callbacks may reach although not public.',
    parse: parsers.networkList,
  }),
  setting({
    key: 'webhookDispatcher',
    env: 'WEBHOOK_DISPATCHER',
    default: 'true',
    doc: 'Run the dispatcher inside `signet serve`; `false` when separate `signet dispatcher` processes do it.',
    parse: parsers.boolean,
  }),
  setting({
    key: 'webhookConcurrency',
    env: 'WEBHOOK_CONCURRENCY',
    default: '64',
    doc: 'Attempts in flight per dispatcher process.',
    parse: parsers.integer(1, 10_000),
  }),
  setting({
    key: 'webhookEndpointConcurrency',
    env: 'WEBHOOK_ENDPOINT_CONCURRENCY',
    default: '16',
    doc: 'Attempts in flight to one endpoint per dispatcher process, so a slow endpoint cannot take every slot.',
    parse: parsers.integer(1, 1000),
  }),
  setting({
    key: 'webhookPollIntervalMs',
    env: 'WEBHOOK_POLL_INTERVAL',
    default: '1s',
    doc: 'Fallback poll; new events wake the dispatcher at once (in process; `LISTEN/NOTIFY` on PostgreSQL).',
    parse: parsers.duration(50, 60_000),
  }),
  setting({
    key: 'eventRetentionMs',
    env: 'EVENT_RETENTION',
    default: '30d',
    doc: 'How long events and delivery logs are kept (`/api/events`); refused if shorter than the retry window.',
    parse: parsers.duration(3_600_000, 3650 * 86_400_000),
  }),
] as const;
