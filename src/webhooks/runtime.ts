// The webhook machinery one process needs, built from configuration: the secret box, the outbox, the
// address policy and, when this process dispatches, the dispatcher with its wake-up source.
import type { FastifyBaseLogger as BaseLogger } from 'fastify';
import type { Config } from '../config/config.ts';
import type { DatabaseHandle } from '../db/database.ts';
import { listenForCommits, type CommitListener } from './delivery/commit-listener.ts';
import type { AttemptSender } from './delivery/callback-client.ts';
import { ThreadedCallbackClient } from './delivery/sender-thread.ts';
import { Dispatcher } from './delivery/dispatcher.ts';
import type { HandOffTarget } from './delivery/hand-off.ts';
import type { EndpointContext } from './api/endpoints.service.ts';
import { Outbox } from './outbox/events.outbox.ts';
import { AuditRelay } from './outbox/audit-relay.ts';
import { latestSealedSecret } from './store/endpoints.repository.ts';
import { AddressPolicy } from './delivery/address-policy.ts';
import { resolveSecretKey, SecretBox } from './store/secrets.ts';

export const USER_AGENT = 'Signet-Webhooks/0.1 (+https://github.com/signet)';

export interface WebhookRuntime {
  context: EndpointContext;
  dispatcher: Dispatcher | undefined;
  /** Starts dispatching (if this process dispatches). */
  start(): void;
  /** Stops claiming, finishes or releases what is in flight, closes connections. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Throws SecretKeyError (the process refuses to start) when the key cannot open the secrets already
 * sealed in the database: a lost key file or a wrong WEBHOOK_SECRET_KEY.
 */
export async function createWebhookRuntime(
  config: Readonly<Config>,
  database: DatabaseHandle,
  log: BaseLogger,
  options: { dispatch: boolean },
): Promise<WebhookRuntime> {
  const box = new SecretBox(
    resolveSecretKey(config.webhookSecretKey, config.databaseUrl, await latestSealedSecret(database.db)),
  );
  const outbox = new Outbox(
    database.dialect,
    () => running?.dispatcher.wake(),
    (): HandOffTarget | undefined => running?.dispatcher,
  );
  const policy = new AddressPolicy(config.webhookAllowedNetworks);
  const context: EndpointContext = {
    dialect: database.dialect,
    box,
    outbox,
    urlRules: { allowHttp: config.webhookAllowHttp, policy },
    secretOverlapMs: config.webhookSecretOverlapMs,
  };
  const running = options.dispatch ? createDispatcher(config, database, log, { box, outbox }) : undefined;
  if (!running) return { context, dispatcher: undefined, start: () => {}, stop: async () => {} };
  let listener: CommitListener | undefined;
  // The audit trail's stream (docs/security.md, "Streaming the audit trail") runs where deliveries are dispatched.
  const auditRelay = new AuditRelay(database.db, outbox, log);
  return {
    context,
    dispatcher: running.dispatcher,
    start() {
      if (database.dialect === 'postgres')
        listener = listenForCommits(config.databaseUrl, () => running.dispatcher.wake(), log);
      running.dispatcher.start();
      auditRelay.start();
    },
    async stop(graceMs) {
      await listener?.close();
      await auditRelay.stop();
      await running.dispatcher.stop(graceMs);
      await running.client.close();
    },
  };
}

function createDispatcher(
  config: Readonly<Config>,
  database: DatabaseHandle,
  log: BaseLogger,
  parts: { box: SecretBox; outbox: Outbox },
): { dispatcher: Dispatcher; client: AttemptSender } {
  const { box, outbox } = parts;

  // The pool is per origin, but the per-endpoint limit is the dispatcher's: several endpoints can share
  // one host. With only WEBHOOK_ENDPOINT_CONCURRENCY connections there, one endpoint's slow requests
  // queued the others' (their timeout running while they waited unsent). As many connections as
  // attempts can be in flight means an attempt never waits for a connection.
  const settings = {
    timeoutMs: config.webhookTimeoutMs,
    connectionsPerOrigin: config.webhookConcurrency,
    userAgent: USER_AGENT,
  };
  // The HTTP side of attempts runs on its own thread (sender-thread.ts): undici is most of an attempt's
  // cost, and this event loop is the API's too. Claims, leases and outcomes stay here.
  const client = new ThreadedCallbackClient({ ...settings, allowedNetworks: config.webhookAllowedNetworks });
  const dispatcher = new Dispatcher({
    db: database.db,
    dialect: database.dialect,
    box,
    outbox,
    client,
    log,
    settings: {
      concurrency: config.webhookConcurrency,
      endpointConcurrency: config.webhookEndpointConcurrency,
      pollIntervalMs: config.webhookPollIntervalMs,
      timeoutMs: config.webhookTimeoutMs,
      retry: { scheduleMs: config.webhookRetryScheduleMs, retryAfterCapMs: config.webhookRetryAfterCapMs },
      disableAfterMs: config.webhookDisableAfterMs,
      headerName: config.webhookHeaderName,
      retentionMs: config.eventRetentionMs,
    },
  });
  return { dispatcher, client };
}
