// Prometheus metrics (docs/reference/metrics.md): one prom-client Registry per app instance, never the global
// default one, so two apps in one process (the tests start many) never share or double-register a
// metric. Names follow the Prometheus conventions: a `signet_` prefix, the unit in the name, `_total`
// on counters. No label carries an unbounded value (no ids, URLs or client ids): every label below
// takes its values from a short fixed list, or from the route templates the app declares.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's metrics (src/metrics/metrics.ts); recorded whatever METRICS_PORT says, exposed unless it is `off`. */
    metrics: Metrics;
  }
}

/** Seconds; a request or a webhook attempt from 5 ms to the 10 s webhook timeout. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type SignInOutcome = 'success' | 'failure' | 'throttled';
type DatabaseErrorKind = 'outage' | 'other';

/** What one webhook attempt came to (the dispatcher's AttemptResult, reduced to bounded values). */
interface AttemptObservation {
  ok: boolean;
  /** null when the receiver answered 2xx. */
  errorKind: string | null;
  durationMs: number;
}

/** The webhook backlog at scrape time, read from the shared database (the same on every instance). */
export interface DeliveryBacklog {
  pending: number;
  /** Seconds since the oldest delivery that is due became due; 0 when none is due. */
  oldestDueAgeSeconds: number;
  /** Deliveries leased by a dispatcher (any instance) right now. */
  inFlight: number;
}

export interface Metrics {
  readonly registry: Registry;
  readonly contentType: string;
  readonly httpRequestDuration: Histogram<'route' | 'method' | 'status_class'>;
  readonly tokensIssued: Counter<'grant_type'>;
  readonly signIns: Counter<'outcome'>;
  readonly webhookAttempts: Counter<'outcome' | 'error_kind'>;
  readonly webhookAttemptDuration: Histogram<'outcome'>;
  readonly idempotencyReplays: Counter;
  readonly idempotencyConflicts: Counter<'reason'>;
  readonly rateLimitRefusals: Counter;
  readonly databaseErrors: Counter<'kind'>;
  signIn(outcome: SignInOutcome): void;
  tokenIssued(grantType: unknown): void;
  webhookAttempt(observation: AttemptObservation): void;
  databaseError(kind: DatabaseErrorKind): void;
  /** Reads the backlog at each scrape; a failed read leaves the three gauges NaN for that scrape. */
  watchDeliveryBacklog(read: () => Promise<DeliveryBacklog>, onError: (err: unknown) => void): void;
  /** The exposition text (text/plain; version=0.0.4). */
  render(): Promise<string>;
}

/** The grant types oidc-provider can issue tokens for here; anything else is counted as `other`. */
const GRANT_TYPES = new Set([
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:openid:params:grant-type:ciba',
]);

/** The dispatcher's error kinds (src/webhooks/delivery/callback-client.ts); `none` for a 2xx. */
const ERROR_KINDS = new Set(['timeout', 'connection', 'dns', 'refused_address', 'tls', 'redirect', 'status']);

export function createMetrics(options: { defaultMetrics: boolean }): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) defaultProcessMetrics(registry);
  const registers = [registry];
  const httpRequestDuration = new Histogram({
    name: 'signet_http_request_duration_seconds',
    help: 'Time from receiving a request to sending its response, by route template, method and status class.',
    labelNames: ['route', 'method', 'status_class'] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const tokensIssued = new Counter({
    name: 'signet_oauth_tokens_issued_total',
    help: 'Successful token endpoint responses of the built-in authorization server, by grant type.',
    labelNames: ['grant_type'] as const,
    registers,
  });
  const signIns = new Counter({
    name: 'signet_sign_ins_total',
    help: 'Sign-in form submissions: success, failure (wrong e-mail or password, disabled account), throttled.',
    labelNames: ['outcome'] as const,
    registers,
  });
  const webhookAttempts = new Counter({
    name: 'signet_webhook_attempts_total',
    help: 'Webhook delivery attempts by this instance, by outcome and error kind (none when it succeeded).',
    labelNames: ['outcome', 'error_kind'] as const,
    registers,
  });
  const webhookAttemptDuration = new Histogram({
    name: 'signet_webhook_attempt_duration_seconds',
    help: 'Duration of webhook delivery attempts by this instance, by outcome.',
    labelNames: ['outcome'] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const idempotencyReplays = new Counter({
    name: 'signet_idempotency_replays_total',
    help: 'Requests answered with the stored response of an earlier request with the same Idempotency-Key.',
    registers,
  });
  const idempotencyConflicts = new Counter({
    name: 'signet_idempotency_conflicts_total',
    help: 'Idempotency-Key conflicts (409): in_flight (the first request still runs), key_reused (another body).',
    labelNames: ['reason'] as const,
    registers,
  });
  const rateLimitRefusals = new Counter({
    name: 'signet_rate_limit_refusals_total',
    help: 'Requests refused with 429 by the per-caller rate limit.',
    registers,
  });
  const databaseErrors = new Counter({
    name: 'signet_database_errors_total',
    help: 'Failed database queries: outage (unreachable, timed out, locked) or other (a fault in the query).',
    labelNames: ['kind'] as const,
    registers,
  });
  for (const kind of ['outage', 'other'] as const) databaseErrors.labels(kind).inc(0);
  const backlog = backlogGauges(registers);

  return {
    registry,
    contentType: registry.contentType,
    httpRequestDuration,
    tokensIssued,
    signIns,
    webhookAttempts,
    webhookAttemptDuration,
    idempotencyReplays,
    idempotencyConflicts,
    rateLimitRefusals,
    databaseErrors,
    signIn: (outcome) => signIns.labels(outcome).inc(),
    tokenIssued: (grantType) =>
      tokensIssued.labels(typeof grantType === 'string' && GRANT_TYPES.has(grantType) ? grantType : 'other').inc(),
    webhookAttempt: ({ ok, errorKind, durationMs }) => {
      const outcome = ok ? 'succeeded' : 'failed';
      const kind = errorKind === null ? 'none' : ERROR_KINDS.has(errorKind) ? errorKind : 'other';
      webhookAttempts.labels(outcome, kind).inc();
      webhookAttemptDuration.labels(outcome).observe(durationMs / 1000);
    },
    databaseError: (kind) => databaseErrors.labels(kind).inc(),
    watchDeliveryBacklog: (read, onError) => backlog.watch(read, onError),
    render: () => registry.metrics(),
  };
}

/**
 * prom-client's default process metrics, less three gauges named `…_total` that `promtool check metrics`
 * rejects (only counters end in `_total`); the same numbers remain per type in `nodejs_active_handles`,
 * `nodejs_active_requests` and `nodejs_active_resources`.
 */
function defaultProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
    registry.removeSingleMetric(name);
}

/** How long one read of the webhook backlog answers scrapes. */
const BACKLOG_READ_REUSE_MS = 1000;

/**
 * The three backlog gauges share one read per scrape: the first gauge collected reads the database and
 * the other two reuse that answer (prom-client collects each metric in turn within one scrape), as do
 * scrapes within BACKLOG_READ_REUSE_MS.
 */
function backlogGauges(registers: Registry[]) {
  let read: (() => Promise<DeliveryBacklog>) | undefined;
  let onError: (err: unknown) => void = () => undefined;
  let current: Promise<DeliveryBacklog | undefined> | undefined;
  const snapshot = (): Promise<DeliveryBacklog | undefined> => {
    if (!read) return Promise.resolve(undefined);
    current ??= read()
      .catch((err: unknown) => {
        onError(err);
        return undefined;
      })
      // Kept for a second: a scraper (or a script) polling /metrics in a loop must not keep the
      // backlog query (which grows with the backlog) running without a pause.
      .finally(() => setTimeout(() => (current = undefined), BACKLOG_READ_REUSE_MS).unref());
    return current;
  };
  const gauge = (name: string, help: string, pick: (b: DeliveryBacklog) => number) =>
    new Gauge({
      name,
      help,
      registers,
      async collect() {
        const backlog = await snapshot();
        this.set(backlog ? pick(backlog) : Number.NaN);
      },
    });
  gauge(
    'signet_webhook_deliveries_pending',
    'Webhook deliveries waiting to be sent (due or retrying later), across all instances (one shared database).',
    (b) => b.pending,
  );
  gauge(
    'signet_webhook_oldest_due_delivery_age_seconds',
    'How long the oldest due webhook delivery has waited since it became due; 0 when none is due.',
    (b) => b.oldestDueAgeSeconds,
  );
  gauge(
    'signet_webhook_deliveries_in_flight',
    'Webhook deliveries a dispatcher holds a lease on right now (being sent), across all instances.',
    (b) => b.inFlight,
  );
  return {
    watch(reader: () => Promise<DeliveryBacklog>, errors: (err: unknown) => void) {
      read = reader;
      onError = errors;
    },
  };
}
