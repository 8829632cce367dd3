// The dispatcher: claims due deliveries under a lease, sends each signed attempt, and records the
// outcome. It never holds a transaction across an HTTP call: claim (one statement), send, then record
// (one batched transaction). A dispatcher that dies mid-delivery loses nothing: its lease expires and
// any dispatcher claims the delivery again (at least once).
//
// Concurrency is bounded globally and per endpoint, so one slow endpoint cannot take every slot: the
// claim skips endpoints that already have their share in flight.
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger as BaseLogger } from 'fastify';
import type { Db, Dialect } from '../db/database.ts';
import * as deliveries from './deliveries.repository.ts';
import type { Outcome, SendableDelivery } from './deliveries.repository.ts';
import type { AttemptResult, CallbackClient } from './delivery.http.ts';
import { activeSecrets } from './endpoints.service.ts';
import { purgeEvents } from './events.repository.ts';
import { nextRetryDelay, type RetrySettings } from './retry-policy.ts';
import type { SecretBox } from './secrets.ts';
import { deliveryBody, signatureHeaders } from './signing.ts';
import { settleEndpoints } from './endpoint-health.ts';
import type { Outbox } from './events.outbox.ts';

export interface DispatcherSettings {
  concurrency: number;
  endpointConcurrency: number;
  pollIntervalMs: number;
  timeoutMs: number;
  retry: RetrySettings;
  disableAfterMs: number;
  headerName: string;
  retentionMs: number;
}

export interface DispatcherDeps {
  db: Db;
  dialect: Dialect;
  box: SecretBox;
  outbox: Outbox;
  client: CallbackClient;
  settings: DispatcherSettings;
  log: BaseLogger;
  now?: () => Date;
}

/** Longer than one attempt can take (the timeout) plus the time to record it. */
const LEASE_MARGIN_MS = 10_000;
const RETENTION_INTERVAL_MS = 3_600_000;

export class Dispatcher {
  readonly #deps: DispatcherDeps;
  readonly #now: () => Date;
  readonly #inFlight = new Map<string, Promise<void>>();
  /** The lease token each delivery in flight was claimed with. */
  readonly #leases = new Map<string, string>();
  readonly #perEndpoint = new Map<string, number>();
  #outcomes: Outcome[] = [];
  #flushing: Promise<void> | undefined;
  #kicked = false;
  #wakeSleeper: (() => void) | undefined;
  #stopping = false;
  #loop: Promise<void> | undefined;
  #retention: NodeJS.Timeout | undefined;

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  start(): void {
    this.#loop = this.#run();
    this.#retention = setInterval(() => void this.purgeExpiredEvents(), RETENTION_INTERVAL_MS).unref();
  }

  /** New deliveries were committed (or a slot freed): claim now instead of at the next poll. */
  wake(): void {
    this.#kicked = true;
    this.#wakeSleeper?.();
  }

  /**
   * Graceful stop: claims nothing more, waits up to `graceMs` for attempts in flight and records them;
   * leases of attempts still running after that are released so another dispatcher can take them.
   */
  async stop(graceMs = this.#deps.settings.timeoutMs): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#retention);
    this.wake();
    await this.#loop;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.allSettled(this.#inFlight.values()), grace]);
    clearTimeout(timer);
    await this.#flushAll();
    for (const [id, leaseToken] of this.#leases) await this.#release(id, leaseToken);
  }

  async purgeExpiredEvents(): Promise<number> {
    try {
      return await purgeEvents(this.#deps.db, new Date(this.#now().getTime() - this.#deps.settings.retentionMs));
    } catch (err) {
      this.#deps.log.warn({ err }, 'event retention purge failed');
      return 0;
    }
  }

  async #run(): Promise<void> {
    const { settings, log } = this.#deps;
    while (!this.#stopping) {
      try {
        const drained = await this.#claimAndSend();
        if (this.#stopping) break;
        if (drained) await this.#sleep(await this.#idleDelay());
        else if (this.#inFlight.size >= settings.concurrency) await this.#sleep(settings.pollIntervalMs);
      } catch (err) {
        log.error({ err }, 'webhook dispatcher: claim failed; retrying after the poll interval');
        await this.#sleep(settings.pollIntervalMs);
      }
    }
  }

  /** Returns true when nothing more is due right now (claimed fewer than there was room for). */
  async #claimAndSend(): Promise<boolean> {
    const { db, dialect, settings } = this.#deps;
    const room = settings.concurrency - this.#inFlight.size;
    // Consume the wake-up even when there is no room: a wake while every slot is busy (a NOTIFY, a new
    // event) would otherwise make the sleep below return at once, forever, in a microtask loop that
    // starves the event loop (the attempts in flight never finish). A finishing attempt wakes us anyway.
    this.#kicked = false;
    if (room <= 0) return false;
    const now = this.#now();
    const leaseToken = randomBytes(12).toString('base64url');
    const skipEndpoints = [...this.#perEndpoint].filter(([, n]) => n >= settings.endpointConcurrency).map(([id]) => id);
    const claimed = await deliveries.claimDue(db, dialect, { now, leaseUntil: new Date(now.getTime() + settings.timeoutMs + LEASE_MARGIN_MS), leaseToken, limit: room, skipEndpoints });
    const { take, giveBack } = this.#withinEndpointLimits(claimed);
    await deliveries.releaseLeases(db, giveBack, leaseToken);
    for (const delivery of await deliveries.loadSendable(db, take)) this.#start(delivery, leaseToken);
    return claimed.length < room;
  }

  #withinEndpointLimits(claimed: { id: string; endpointId: string }[]): { take: string[]; giveBack: string[] } {
    const take: string[] = [];
    const giveBack: string[] = [];
    const counts = new Map(this.#perEndpoint);
    for (const { id, endpointId } of claimed) {
      const n = counts.get(endpointId) ?? 0;
      if (n >= this.#deps.settings.endpointConcurrency) giveBack.push(id);
      else {
        counts.set(endpointId, n + 1);
        take.push(id);
      }
    }
    return { take, giveBack };
  }

  #start(delivery: SendableDelivery, leaseToken: string): void {
    this.#perEndpoint.set(delivery.endpointId, (this.#perEndpoint.get(delivery.endpointId) ?? 0) + 1);
    const task = this.#attempt(delivery, leaseToken)
      .catch((err: unknown) => this.#deps.log.error({ err, deliveryId: delivery.id }, 'webhook delivery attempt failed unexpectedly; its lease will expire and it will be retried'))
      .finally(() => {
        this.#inFlight.delete(delivery.id);
        this.#leases.delete(delivery.id);
        const left = (this.#perEndpoint.get(delivery.endpointId) ?? 1) - 1;
        if (left === 0) this.#perEndpoint.delete(delivery.endpointId);
        else this.#perEndpoint.set(delivery.endpointId, left);
        this.wake();
      });
    this.#inFlight.set(delivery.id, task);
    this.#leases.set(delivery.id, leaseToken);
  }

  async #attempt(d: SendableDelivery, leaseToken: string): Promise<void> {
    const { box, client, settings } = this.#deps;
    const startedAt = this.#now();
    const body = deliveryBody({ id: d.eventId, type: d.eventType, occurredAt: d.occurredAt, dataJson: d.dataJson }, startedAt);
    const secrets = activeSecrets(box, d.endpointId, d, startedAt);
    const headers = signatureHeaders({ headerName: settings.headerName, deliveryId: d.id, eventType: d.eventType, body, attemptAt: startedAt, secrets });
    const result = await client.post(d.url, headers, body);
    this.#outcomes.push(this.#decide(d, leaseToken, startedAt, result));
    this.#scheduleFlush();
  }

  #decide(d: SendableDelivery, leaseToken: string, startedAt: Date, result: AttemptResult): Outcome {
    const base = { deliveryId: d.id, endpointId: d.endpointId, leaseToken, attempt: d.attemptCount + 1, startedAt, result };
    const now = this.#now();
    if (result.ok) return { ...base, state: 'succeeded', retryIndex: d.retryIndex, nextAttemptAt: now };
    const delay = result.gone ? undefined : nextRetryDelay(this.#deps.settings.retry, d.retryIndex, result.retryAfterMs);
    if (delay === undefined) return { ...base, state: 'failed', retryIndex: d.retryIndex, nextAttemptAt: now };
    return { ...base, state: 'pending', retryIndex: d.retryIndex + 1, nextAttemptAt: new Date(now.getTime() + delay) };
  }

  /** Outcomes are written in batches: one transaction for everything that finished meanwhile. */
  #scheduleFlush(): void {
    if (this.#flushing) return;
    this.#flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#flushAll())
      .finally(() => {
        this.#flushing = undefined;
        if (this.#outcomes.length > 0) this.#scheduleFlush();
      });
  }

  async #flushAll(): Promise<void> {
    while (this.#outcomes.length > 0) {
      const batch = this.#outcomes;
      this.#outcomes = [];
      try {
        await this.#record(batch);
      } catch (err) {
        // The leases expire and the deliveries are attempted again: at least once, never lost.
        this.#deps.log.error({ err, deliveries: batch.length }, 'could not record webhook delivery outcomes');
        return;
      }
    }
  }

  async #record(batch: Outcome[]): Promise<void> {
    const { db, outbox, settings } = this.#deps;
    const now = this.#now();
    await db.transaction().execute(async (trx) => {
      for (const outcome of batch) await deliveries.recordOutcome(trx, outcome, now);
      await settleEndpoints(trx, outbox, batch, { disableAfterMs: settings.disableAfterMs, now });
    });
  }

  /** Only while this claim still holds the lease: another dispatcher may have taken it over since. */
  async #release(id: string, leaseToken: string): Promise<void> {
    try {
      await deliveries.releaseLeases(this.#deps.db, [id], leaseToken);
    } catch (err) {
      this.#deps.log.warn({ err }, 'could not release leases at shutdown; they expire on their own');
    }
  }

  async #idleDelay(): Promise<number> {
    const { db, settings } = this.#deps;
    const now = this.#now();
    const due = await deliveries.nextDueAt(db, now);
    return due ? Math.min(Math.max(due.getTime() - now.getTime(), 0), settings.pollIntervalMs) : settings.pollIntervalMs;
  }

  async #sleep(ms: number): Promise<void> {
    if (this.#kicked || this.#stopping) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wakeSleeper = done;
    });
    this.#wakeSleeper = undefined;
  }
}
