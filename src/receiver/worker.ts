// Runs the consumer's handler for each inbox entry: in order of arrival, one at a time, retried on a
// backoff schedule and then left `dead` for an operator. The webhook was acknowledged long before,
// so a slow or failing handler never makes the producer retry. An entry waiting for its retry does
// not hold back later ones. Delivery to the handler is at least once: if the process dies between
// the handler's success and `complete`, the lease runs out and the entry is handed over again.
import type { Inbox, InboxEntry } from './inbox.ts';
import { toReceivedEvent, type EventHandler } from './event.ts';

export type { EventHandler, ReceivedEvent } from './event.ts';

export type WorkerLog = (msg: string, extra?: object) => void;

export interface InboxWorkerOptions {
  inbox: Inbox;
  handler: EventHandler;
  /** Delay before each retry; after the last one fails the entry is dead. */
  retryScheduleMs?: readonly number[];
  /** How long a claim holds; an entry whose worker crashed is claimed again after it. */
  leaseMs?: number;
  pollIntervalMs?: number;
  /** Done entries are kept this long for dedupe, then purged. */
  retentionMs?: number;
  log?: WorkerLog;
  now?: () => Date;
}

export const DEFAULT_RETRY_SCHEDULE_MS = [1_000, 5_000, 30_000, 120_000, 600_000] as const;
const DEFAULT_LEASE_MS = 5 * 60_000;
const DEFAULT_POLL_INTERVAL_MS = 1_000;
// 7 days: far longer than the producer's retry window (about 28 h), so every redelivery of a
// processed event still finds its delivery id and event id and is answered as a duplicate.
export const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60_000;
const PURGE_INTERVAL_MS = 60 * 60_000;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}

export class InboxWorker {
  readonly #inbox: Inbox;
  readonly #handler: EventHandler;
  readonly #schedule: readonly number[];
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #retentionMs: number;
  readonly #log: WorkerLog;
  readonly #now: () => Date;
  #running = false;
  #loop: Promise<void> | undefined;
  #wakeUp: (() => void) | undefined;
  #woken = false;
  #lastPurge = 0;

  constructor(options: InboxWorkerOptions) {
    this.#inbox = options.inbox;
    this.#handler = options.handler;
    this.#schedule = options.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#pollMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.#retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#log = options.log ?? (() => {});
    this.#now = options.now ?? (() => new Date());
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
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
    const entry = await this.#inbox.claimNext(this.#now(), this.#leaseMs);
    if (!entry) return false;
    try {
      await this.#handler(toReceivedEvent(entry));
    } catch (error) {
      await this.#failed(entry, messageOf(error));
      return true;
    }
    await this.#inbox.complete(entry.seq);
    return true;
  }

  async #failed(entry: InboxEntry, error: string): Promise<void> {
    // entry.attempts counts this attempt: the first failure waits schedule[0], and so on.
    const delay = this.#schedule[entry.attempts - 1];
    const about = { seq: entry.seq, source: entry.source, eventId: entry.eventId, attempts: entry.attempts, error };
    if (delay === undefined) {
      await this.#inbox.markDead(entry.seq, error);
      this.#log('receiver event dead after its last retry', about);
      return;
    }
    await this.#inbox.retryLater(entry.seq, error, new Date(this.#now().getTime() + delay));
    this.#log('receiver handler failed; will retry', { ...about, retryInMs: delay });
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
