// The dispatcher: claims due deliveries under a lease, sends each signed attempt, and records the
// outcome. It never holds a transaction across an HTTP call: claim (one statement), send, then record
// (one batched transaction). A dispatcher that dies mid-delivery loses nothing: its lease expires and
// any dispatcher claims the delivery again (at least once).
//
// Concurrency is bounded globally and per endpoint, so one slow endpoint cannot take every slot: the
// claim takes no more of an endpoint's deliveries than it has room for.
//
// Claims and records are batched, because on SQLite every write is a commit and on PostgreSQL a round
// trip: new work (a commit, a NOTIFY) is claimed at once, but while a backlog waits, freed slots are
// gathered into one claim (a quarter of an endpoint's share, or whatever freed within 2 ms).
//
// Deliveries this process commits skip the claim altogether when there is room for them: the outbox
// writes them leased to this dispatcher and hands them over once they are durable (hand-off.ts).
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger as BaseLogger } from 'fastify';
import type { Db, Dialect } from '../../db/executor.ts';
import { OutcomeRecorder } from './outcome-recorder.ts';
import * as deliveries from '../store/deliveries.repository.ts';
import { claimBatch, type Outcome, type SendableDelivery } from '../store/dispatch.repository.ts';
import type { AttemptResult, AttemptSender } from './callback-client.ts';
import { OpenedSecrets } from './opened-secrets.ts';
import { purgeEvents } from '../store/events.repository.ts';
import { nextRetryDelay, type RetrySettings } from './retry-policy.ts';
import type { SecretBox } from '../store/secrets.ts';
import { bodyTimestamp, deliveryBody, signatureHeaders } from './signing.ts';
import type { Outbox } from '../outbox/events.outbox.ts';
import type { HandOffLease, HandOffTarget } from './hand-off.ts';

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

interface DispatcherDeps {
  db: Db;
  dialect: Dialect;
  box: SecretBox;
  outbox: Outbox;
  client: AttemptSender;
  settings: DispatcherSettings;
  log: BaseLogger;
  now?: () => Date;
}

/** Longer than one attempt can take (the timeout) plus the time to record it. */
const LEASE_MARGIN_MS = 10_000;
const RETENTION_INTERVAL_MS = 3_600_000;
/** While a backlog waits, a freed slot is claimed again within this long, together with any freed meanwhile. */
const CLAIM_GATHER_MS = 2;
/** After a failed claim (the database was lost), the next try comes this soon, or at the poll if that is sooner. */
const CLAIM_RETRY_MS = 1000;
/**
 * Woken this long after a retry falls due or a lease ends: times are stored to the millisecond and a
 * lease is free only once it is past (dispatch.repository.ts), and a timer may fire a millisecond early
 * by the wall clock. Waking exactly at the boundary would find nothing, and then sleep a whole poll.
 */
const DUE_MARGIN_MS = 2;

/** A delivery handed over by the outbox (already leased), waiting for a slot. */
interface Handed {
  delivery: SendableDelivery;
  lease: HandOffLease;
}

/** How the deliveries this dispatcher sent came to it. */
export interface DispatcherStats {
  /** Leased by a claim. */
  claimed: number;
  /** Handed over by the outbox of this process, leased at insert. */
  handedOff: number;
}

export class Dispatcher implements HandOffTarget {
  readonly #deps: DispatcherDeps;
  readonly #now: () => Date;
  readonly #inFlight = new Map<string, Promise<void>>();
  /** The lease token each delivery in flight was claimed with. */
  readonly #leases = new Map<string, string>();
  readonly #perEndpoint = new Map<string, number>();
  /** Handed over while every slot (or its endpoint's) was taken: started as slots free, oldest first. */
  #handed: Handed[] = [];
  readonly stats: DispatcherStats = { claimed: 0, handedOff: 0 };
  readonly #secrets: OpenedSecrets;
  /** Slots freed since the last claim that are worth a claim on their own. */
  readonly #claimBatch: number;
  readonly #outcomes: OutcomeRecorder;
  /** Claim as soon as the loop can: new work was committed, or enough slots freed while a backlog waits. */
  #kicked = false;
  /** The last claim left due work behind (it had no room for all of it). */
  #backlogged = false;
  #freedSinceClaim = 0;
  #gatherTimer: NodeJS.Timeout | undefined;
  #wakeSleeper: (() => void) | undefined;
  #stopping = false;
  #loop: Promise<void> | undefined;
  #retention: NodeJS.Timeout | undefined;
  /** Told of every attempt's result (app.ts wires the metrics, docs/reference/metrics.md). */
  #onAttempt: ((result: AttemptResult) => void) | undefined;

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
    this.#secrets = new OpenedSecrets(deps.box);
    this.#outcomes = new OutcomeRecorder({ ...deps, now: this.#now });
    const { concurrency, endpointConcurrency } = deps.settings;
    this.#claimBatch = Math.max(1, Math.floor(Math.min(concurrency, endpointConcurrency) / 4));
  }

  /** Reports each attempt's result (outcome, error kind, duration) as soon as the receiver answered. */
  observeAttempts(observer: (result: AttemptResult) => void): void {
    this.#onAttempt = observer;
  }

  start(): void {
    this.#loop = this.#run();
    this.#retention = setInterval(() => void this.purgeExpiredEvents(), RETENTION_INTERVAL_MS).unref();
  }

  /** New deliveries were committed: claim now instead of at the next poll. */
  wake(): void {
    this.#kicked = true;
    this.#wakeSleeper?.();
  }

  /**
   * The outbox is about to write one delivery to each of `endpointIds`: a lease for them if they could
   * start at once. Not while due work waits in the database (it is older; the claim takes it oldest
   * first) or while this dispatcher is not running: they are then written unleased, to be claimed.
   */
  offer(endpointIds: readonly string[]): HandOffLease | undefined {
    const { concurrency, endpointConcurrency, timeoutMs } = this.#deps.settings;
    if (!this.#loop || this.#stopping || this.#backlogged) return undefined;
    if (this.#inFlight.size + this.#handed.length + endpointIds.length > concurrency) return undefined;
    const wanted = new Map<string, number>();
    for (const id of endpointIds) wanted.set(id, (wanted.get(id) ?? 0) + 1);
    for (const h of this.#handed) {
      const n = wanted.get(h.delivery.endpointId);
      if (n !== undefined) wanted.set(h.delivery.endpointId, n + 1);
    }
    for (const [id, n] of wanted) if ((this.#perEndpoint.get(id) ?? 0) + n > endpointConcurrency) return undefined;
    const token = randomBytes(12).toString('base64url');
    return { token, until: new Date(this.#now().getTime() + timeoutMs + LEASE_MARGIN_MS) };
  }

  /** The offered deliveries are durably committed: send them (hand-off.ts). */
  take(lease: HandOffLease, deliveries: SendableDelivery[]): void {
    if (this.#stopping) {
      void this.#releaseHanded(deliveries.map((delivery) => ({ delivery, lease })));
      return;
    }
    this.stats.handedOff += deliveries.length;
    for (const delivery of deliveries) this.#handed.push({ delivery, lease });
    try {
      this.#startHanded();
    } catch (err) {
      // Called from the commit's callbacks, where a throw would be uncaught. What was not started
      // stays leased until its lease expires, then is claimed (at least once).
      this.#deps.log.error({ err }, 'could not start handed-over webhook deliveries; their leases will expire');
    }
  }

  /**
   * Starts what was handed over, as far as the limits allow. One whose lease would end before its
   * attempt could be recorded (it waited too long for a slot) is given back to be claimed instead.
   */
  #startHanded(): void {
    if (this.#handed.length === 0) return;
    const { concurrency, endpointConcurrency, timeoutMs } = this.#deps.settings;
    const latestUntil = this.#now().getTime() + timeoutMs + LEASE_MARGIN_MS / 2;
    const waiting: Handed[] = [];
    const stale: Handed[] = [];
    for (const h of this.#handed) {
      const { endpointId } = h.delivery;
      if (h.lease.until.getTime() < latestUntil) stale.push(h);
      else if (this.#inFlight.size < concurrency && (this.#perEndpoint.get(endpointId) ?? 0) < endpointConcurrency)
        this.#start(h.delivery, h.lease.token);
      else waiting.push(h);
    }
    this.#handed = waiting;
    if (stale.length > 0) void this.#releaseHanded(stale).then(() => this.wake());
  }

  async #releaseHanded(handed: Handed[]): Promise<void> {
    const byToken = new Map<string, string[]>();
    for (const { delivery, lease } of handed)
      byToken.set(lease.token, [...(byToken.get(lease.token) ?? []), delivery.id]);
    for (const [token, ids] of byToken) await this.#release(ids, token);
  }

  /** An attempt finished. Only a waiting backlog needs a claim for the freed slot; gather a few first. */
  #slotFreed(): void {
    this.#startHanded();
    if (!this.#backlogged) return;
    this.#freedSinceClaim++;
    if (this.#freedSinceClaim >= this.#claimBatch) this.wake();
    else this.#gatherTimer ??= setTimeout(() => this.wake(), CLAIM_GATHER_MS);
  }

  /**
   * Graceful stop: claims nothing more, waits up to `graceMs` for attempts in flight and records them;
   * leases of attempts still running after that are released so another dispatcher can take them.
   */
  async stop(graceMs = this.#deps.settings.timeoutMs): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#retention);
    clearTimeout(this.#gatherTimer);
    this.wake();
    await this.#loop;
    await this.#releaseHanded(this.#handed.splice(0));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.allSettled(this.#inFlight.values()), grace]);
    clearTimeout(timer);
    await this.#outcomes.flush();
    for (const [id, leaseToken] of this.#leases) await this.#release([id], leaseToken);
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
        this.#backlogged = await this.#claimAndSend();
        if (this.#stopping) break;
        await this.#sleep(this.#backlogged ? settings.pollIntervalMs : await this.#idleDelay());
      } catch (err) {
        log.error({ err }, 'webhook dispatcher: claim failed; retrying shortly');
        // Not a whole (possibly long) poll interval: the backlog the failure left behind waits for it.
        await this.#sleep(Math.min(settings.pollIntervalMs, CLAIM_RETRY_MS));
      }
    }
  }

  /** Returns true when due work may be left behind: there was no room for all of it. */
  async #claimAndSend(): Promise<boolean> {
    const { db, dialect, settings } = this.#deps;
    // Consume the wake-up even when there is no room: a wake while every slot is busy (a NOTIFY, a new
    // event) would otherwise make the sleep below return at once, forever, in a microtask loop that
    // starves the event loop (the attempts in flight never finish). A freed slot wakes us again.
    this.#kicked = false;
    this.#freedSinceClaim = 0;
    clearTimeout(this.#gatherTimer);
    this.#gatherTimer = undefined;
    const room = settings.concurrency - this.#inFlight.size;
    if (room <= 0) return true;
    const now = this.#now();
    const leaseToken = randomBytes(12).toString('base64url');
    const leaseUntil = new Date(now.getTime() + settings.timeoutMs + LEASE_MARGIN_MS);
    // A snapshot: attempts finishing while the claim runs must not change what it is judged by below.
    const inFlight = new Map(this.#perEndpoint);
    const claimed = await claimBatch(db, dialect, {
      now,
      leaseUntil,
      leaseToken,
      limit: room,
      endpointLimit: settings.endpointConcurrency,
      inFlight,
    });
    this.stats.claimed += claimed.length;
    for (const delivery of claimed) this.#start(delivery, leaseToken);
    return claimed.length === room || this.#reachedEndpointLimit(inFlight, claimed);
  }

  /** Whether the claim stopped at some endpoint's limit (so more of its deliveries may be due). */
  #reachedEndpointLimit(inFlight: Map<string, number>, claimed: SendableDelivery[]): boolean {
    for (const { endpointId } of claimed) inFlight.set(endpointId, (inFlight.get(endpointId) ?? 0) + 1);
    return [...inFlight.values()].some((n) => n >= this.#deps.settings.endpointConcurrency);
  }

  #start(delivery: SendableDelivery, leaseToken: string): void {
    this.#perEndpoint.set(delivery.endpointId, (this.#perEndpoint.get(delivery.endpointId) ?? 0) + 1);
    const task = this.#attempt(delivery, leaseToken)
      .catch((err: unknown) =>
        this.#deps.log.error(
          { err, deliveryId: delivery.id },
          'webhook delivery attempt failed unexpectedly; its lease will expire and it will be retried',
        ),
      )
      .finally(() => {
        this.#inFlight.delete(delivery.id);
        this.#leases.delete(delivery.id);
        const left = (this.#perEndpoint.get(delivery.endpointId) ?? 1) - 1;
        if (left === 0) this.#perEndpoint.delete(delivery.endpointId);
        else this.#perEndpoint.set(delivery.endpointId, left);
        this.#slotFreed();
      });
    this.#inFlight.set(delivery.id, task);
    this.#leases.set(delivery.id, leaseToken);
  }

  async #attempt(d: SendableDelivery, leaseToken: string): Promise<void> {
    const { client, settings } = this.#deps;
    const startedAt = this.#now();
    // The time the body and webhook-timestamp carry: never before the event, even if the clock stepped back.
    const stampedAt = bodyTimestamp(d.occurredAt, startedAt);
    const body = deliveryBody(
      { id: d.eventId, type: d.eventType, occurredAt: d.occurredAt, dataJson: d.dataJson },
      stampedAt,
    );
    const secrets = this.#secrets.active(d, startedAt);
    const headers = signatureHeaders({
      headerName: settings.headerName,
      deliveryId: d.id,
      eventType: d.eventType,
      body,
      attemptAt: stampedAt,
      secrets,
    });
    const result = await client.post(d.url, headers, body);
    this.#onAttempt?.(result);
    this.#outcomes.add(this.#decide(d, leaseToken, startedAt, result));
  }

  #decide(d: SendableDelivery, leaseToken: string, startedAt: Date, result: AttemptResult): Outcome {
    const base = {
      deliveryId: d.id,
      endpointId: d.endpointId,
      leaseToken,
      attempt: d.attemptCount + 1,
      startedAt,
      result,
    };
    const now = this.#now();
    if (result.ok) return { ...base, state: 'succeeded', retryIndex: d.retryIndex, nextAttemptAt: now };
    const delay = result.gone
      ? undefined
      : nextRetryDelay(this.#deps.settings.retry, d.retryIndex, result.retryAfterMs);
    if (delay === undefined) return { ...base, state: 'failed', retryIndex: d.retryIndex, nextAttemptAt: now };
    return { ...base, state: 'pending', retryIndex: d.retryIndex + 1, nextAttemptAt: new Date(now.getTime() + delay) };
  }

  /** Only while this claim still holds the lease: another dispatcher may have taken it over since. */
  async #release(ids: string[], leaseToken: string): Promise<void> {
    try {
      await deliveries.releaseLeases(this.#deps.db, ids, leaseToken);
    } catch (err) {
      this.#deps.log.warn({ err }, 'could not release leases at shutdown; they expire on their own');
    }
  }

  async #idleDelay(): Promise<number> {
    const { db, settings } = this.#deps;
    const now = this.#now();
    const due = await deliveries.nextDueAt(db, now);
    return due
      ? Math.min(Math.max(due.getTime() - now.getTime() + DUE_MARGIN_MS, 0), settings.pollIntervalMs)
      : settings.pollIntervalMs;
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
