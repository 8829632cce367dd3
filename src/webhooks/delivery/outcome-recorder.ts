// Outcomes of webhook attempts, written in batches: one transaction for everything that finished since the
// last write (on SQLite every write is a commit, on PostgreSQL a round trip). A batch the database refuses
// is written again one outcome at a time, so one bad row cannot send the others again.
import type { FastifyBaseLogger as BaseLogger } from 'fastify';
import type { Db, Dialect } from '../../db/executor.ts';
import type { Outbox } from '../outbox/events.outbox.ts';
import { recordOutcomes, type Outcome } from '../store/dispatch.repository.ts';
import { settleEndpoints } from './endpoint-health.ts';

interface OutcomeRecorderDeps {
  db: Db;
  dialect: Dialect;
  outbox: Outbox;
  settings: { disableAfterMs: number };
  log: BaseLogger;
  now: () => Date;
}

export class OutcomeRecorder {
  readonly #deps: OutcomeRecorderDeps;
  #pending: Outcome[] = [];
  #flushing: Promise<void> | undefined;

  constructor(deps: OutcomeRecorderDeps) {
    this.#deps = deps;
  }

  /** Queues an outcome; it is written with the others at the end of this event-loop turn. */
  add(outcome: Outcome): void {
    this.#pending.push(outcome);
    this.#scheduleFlush();
  }

  /** Outcomes are written in batches: one transaction for everything that finished meanwhile. */
  #scheduleFlush(): void {
    if (this.#flushing) return;
    this.#flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.flush())
      .finally(() => {
        this.#flushing = undefined;
        if (this.#pending.length > 0) this.#scheduleFlush();
      });
  }

  /** Writes everything queued, until nothing is left (outcomes may arrive while a batch is written). */
  async flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending;
      this.#pending = [];
      try {
        await this.#record(batch);
      } catch (err) {
        // One row the database refuses must not sink the others (they would all be sent again when
        // their leases expire): record them one at a time instead.
        this.#deps.log.warn(
          { err, deliveries: batch.length },
          'could not record a batch of webhook delivery outcomes; recording them one at a time',
        );
        for (const outcome of batch) await this.#recordAlone(outcome);
      }
    }
  }

  /**
   * Without what the receiver sent, if need be: the attempt and the delivery's progress matter more
   * than the excerpt, and a delivery whose outcome is never recorded would be re-sent every lease, forever.
   * Should even that fail (the database is down), the lease expires and it is attempted again: at least once.
   */
  async #recordAlone(outcome: Outcome): Promise<void> {
    const { log } = this.#deps;
    try {
      return await this.#record([outcome]);
    } catch (err) {
      log.warn(
        { err, deliveryId: outcome.deliveryId },
        'could not record a webhook delivery outcome; recording it without the response excerpt and error detail',
      );
    }
    const { result } = outcome;
    const bare = {
      ...outcome,
      result: { ...result, responseExcerpt: null, errorDetail: result.errorDetail && '(not recordable)' },
    };
    try {
      await this.#record([bare]);
    } catch (err) {
      log.error(
        { err, deliveryId: outcome.deliveryId },
        'could not record a webhook delivery outcome; its lease will expire and it will be attempted again',
      );
    }
  }

  async #record(batch: Outcome[]): Promise<void> {
    const { db, dialect, outbox, settings } = this.#deps;
    const now = this.#deps.now();
    await db.transaction().execute(async (trx) => {
      await recordOutcomes(trx, dialect, batch, now);
      await settleEndpoints(trx, outbox, batch, { disableAfterMs: settings.disableAfterMs, now });
    });
  }
}
