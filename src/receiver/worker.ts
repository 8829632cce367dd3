// Runs the consumer's handler for each inbox entry: in order of arrival, one at a time, retried on a
// backoff schedule and then left `dead` for an operator. The webhook was acknowledged long before,
// so a slow or failing handler never makes the producer retry. An entry waiting for its retry does
// not hold back later ones. Delivery to the handler is at least once: if the process dies between
// the handler's success and `complete`, the lease runs out and the entry is handed over again.
// The lease is short and renewed by a heartbeat while the handler runs, so a crashed worker's entry is
// free again within seconds however long handlers take (docs/guides/receiving-webhooks.md, "Inbox and worker").
import type { Inbox, InboxEntry } from './inbox.ts';
import { toReceivedEvent, type EventHandler } from './event.ts';

export type { EventHandler, ReceivedEvent } from './event.ts';

export type WorkerLog = (msg: string, extra?: object) => void;

export interface InboxWorkerOptions {
  inbox: Inbox;
  handler: EventHandler;
  /** Delay before each retry; after the last one fails the entry is dead. */
  retryScheduleMs?: readonly number[];
  /**
   * How long a claim holds without a heartbeat; an entry whose worker crashed is claimed again after it.
   * Renewed while the handler runs, so a handler may take far longer.
   */
  leaseMs?: number;
  /** How often the lease is renewed while the handler runs (default: a third of the lease). */
  heartbeatMs?: number;
  pollIntervalMs?: number;
  /** Done entries are kept this long for dedupe, then purged. */
  retentionMs?: number;
  log?: WorkerLog;
  now?: () => Date;
}

export const DEFAULT_RETRY_SCHEDULE_MS = [1_000, 5_000, 30_000, 120_000, 600_000] as const;
// Short, because it bounds how long a crashed worker's entry waits; the heartbeat (every third of it)
// keeps a live worker's claim through two missed renewals, a database hiccup of several seconds.
export const DEFAULT_LEASE_MS = 15_000;
const DEFAULT_POLL_INTERVAL_MS = 1_000;
// 7 days: far longer than the producer's retry window (about 28 h), so every redelivery of a
// processed event still finds its delivery id and event id and is answered as a duplicate.
export const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60_000;
const PURGE_INTERVAL_MS = 60 * 60_000;

function about(entry: InboxEntry): object {
  return { seq: entry.seq, source: entry.source, eventId: entry.eventId, attempts: entry.attempts };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}

export class InboxWorker {
  readonly #inbox: Inbox;
  readonly #handler: EventHandler;
  readonly #schedule: readonly number[];
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #pollMs: number;
  readonly #retentionMs: number;
  readonly #log: WorkerLog;
  readonly #now: () => Date;
  #running = false;
  #loop: Promise<void> | undefined;
  #wakeUp: (() => void) | undefined;
  #woken = false;
  #lastPurge = 0;
  /** Until then claims keep strict arrival order (see start()). */
  #inOrderUntil = 0;

  constructor(options: InboxWorkerOptions) {
    this.#inbox = options.inbox;
    this.#handler = options.handler;
    this.#schedule = options.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#heartbeatMs = options.heartbeatMs ?? Math.max(1, Math.floor(this.#leaseMs / 3));
    this.#pollMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.#retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#log = options.log ?? (() => {});
    this.#now = options.now ?? (() => new Date());
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    // A lease held now may be a crashed predecessor's, with its entry mid-way: for one lease period the
    // worker does not pass a held entry, so that one runs again first, once its lease has run out. After
    // that, any lease still held is renewed by a live worker, which later entries need not wait for.
    this.#inOrderUntil = this.#now().getTime() + this.#leaseMs;
    this.#loop = this.#run();
  }

  /** Called after an entry is recorded, so processing starts at once rather than at the next poll. */
  wake(): void {
    this.#woken = true;
    this.#wakeUp?.();
  }

  /** Lets the entry in progress finish, then stops. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wakeUp?.();
    await this.#loop;
    this.#loop = undefined;
  }

  async #run(): Promise<void> {
    while (this.#running) {
      let worked = false;
      try {
        await this.#purgeWhenDue();
        worked = await this.#processNext();
      } catch (error) {
        // The inbox itself failed (database down): keep the loop alive and try again after a pause.
        this.#log('receiver inbox unavailable', { error: messageOf(error) });
      }
      if (!worked) await this.#sleep();
    }
  }

  async #processNext(): Promise<boolean> {
    const now = this.#now();
    const entry = await this.#inbox.claimNext(now, this.#leaseMs, { inOrder: now.getTime() < this.#inOrderUntil });
    if (!entry) return false;
    const lease = this.#holdLease(entry);
    let failure: string | undefined;
    try {
      await this.#handler(toReceivedEvent(entry));
    } catch (error) {
      failure = messageOf(error);
    } finally {
      await lease.release();
    }
    // Another worker has claimed the entry since (our lease ran out): it is that worker's to settle.
    if (lease.lost()) return true;
    const settled = failure === undefined ? await this.#completed(entry) : await this.#failed(entry, failure);
    if (!settled)
      this.#log('receiver lost the lease before recording the outcome; another worker has the event', about(entry));
    return true;
  }

  /**
   * Renews the lease every heartbeatMs while the handler runs, each time only if this claim still holds
   * the entry; a renewal that finds it taken stops the heartbeat and marks the lease lost.
   */
  #holdLease(entry: InboxEntry): { lost(): boolean; release(): Promise<void> } {
    const leaseId = entry.leaseId!;
    let lost = false;
    let renewing: Promise<void> | undefined;
    const renew = async (): Promise<void> => {
      try {
        if (await this.#inbox.renewLease(entry.seq, leaseId, new Date(this.#now().getTime() + this.#leaseMs))) return;
        lost = true;
        clearInterval(timer);
        this.#log('receiver lost the lease while the handler ran; another worker has the event', about(entry));
      } catch (error) {
        // The database may be back before the lease ends; the settling write checks ownership anyway.
        this.#log('receiver could not renew its lease', { ...about(entry), error: messageOf(error) });
      }
    };
    const timer = setInterval(() => {
      renewing ??= renew().finally(() => (renewing = undefined));
    }, this.#heartbeatMs);
    return {
      lost: () => lost,
      release: async () => {
        clearInterval(timer);
        await renewing;
      },
    };
  }

  async #completed(entry: InboxEntry): Promise<boolean> {
    return this.#inbox.complete(entry.seq, entry.leaseId!);
  }

  async #failed(entry: InboxEntry, error: string): Promise<boolean> {
    // entry.attempts counts this attempt: the first failure waits schedule[0], and so on.
    const delay = this.#schedule[entry.attempts - 1];
    const details = { ...about(entry), error };
    if (delay === undefined) {
      if (!(await this.#inbox.markDead(entry.seq, error, entry.leaseId!))) return false;
      this.#log('receiver event dead after its last retry', details);
      return true;
    }
    if (!(await this.#inbox.retryLater(entry.seq, error, new Date(this.#now().getTime() + delay), entry.leaseId!)))
      return false;
    this.#log('receiver handler failed; will retry', { ...details, retryInMs: delay });
    return true;
  }

  async #purgeWhenDue(): Promise<void> {
    const now = this.#now().getTime();
    if (now - this.#lastPurge < PURGE_INTERVAL_MS) return;
    this.#lastPurge = now;
    const purged = await this.#inbox.purgeProcessed(new Date(now - this.#retentionMs));
    if (purged > 0) this.#log('receiver purged processed entries', { purged });
  }

  /** Waits for the poll interval, a wake() or stop(); a wake() during processing skips the wait. */
  async #sleep(): Promise<void> {
    if (this.#woken || !this.#running) {
      this.#woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.#pollMs);
      this.#wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wakeUp = undefined;
    this.#woken = false;
  }
}
