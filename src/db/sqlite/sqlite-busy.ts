// Waiting for another process's SQLite write lock without blocking the event loop.
// node:sqlite is synchronous: with PRAGMA busy_timeout, a write that finds the database locked (by
// `signet migrate`, an admin command, a `signet dispatcher`, a backup) freezes the whole process while
// it waits, /healthz and /readyz included, and every queued write freezes it again. Here the
// connections' own busy_timeout is 0; a statement that gets SQLITE_BUSY is retried on a timer until
// SQLITE_BUSY_TIMEOUT has passed, and then fails as a 503 with Retry-After (src/http/problems/outage.ts).

const FIRST_RETRY_MS = 2;
const LONGEST_RETRY_MS = 50;
/** node:sqlite's errcode for SQLITE_BUSY exactly: BUSY_SNAPSHOT (517) and the like never clear by waiting. */
const SQLITE_BUSY = 5;

function isBusy(err: unknown): boolean {
  return (
    (err as { code?: unknown; errcode?: unknown } | null)?.code === 'ERR_SQLITE_ERROR' &&
    (err as { errcode?: unknown }).errcode === SQLITE_BUSY
  );
}

/**
 * Retries a statement while SQLite answers SQLITE_BUSY. Callers use it only where a retry is sound: a
 * statement outside a transaction, or the BEGIN IMMEDIATE that takes the write lock (no statement
 * inside such a transaction can meet SQLITE_BUSY half way).
 */
export class BusyWait {
  readonly #boundMs: number;
  /**
   * When a statement last gave up waiting. Writes queue behind the one that waits; without this each
   * of them would wait the whole bound again, one after the other. Within a bound of a give-up, a
   * statement that finds the database still locked fails at once.
   */
  #gaveUpAt: number | undefined;

  constructor(boundMs: number) {
    this.#boundMs = boundMs;
  }

  /** Runs `statement` at once; only a busy database costs a wait, on timers. */
  async run<R>(statement: () => R): Promise<R> {
    let deadline: number | undefined;
    for (let delay = FIRST_RETRY_MS; ; delay = Math.min(delay * 2, LONGEST_RETRY_MS)) {
      try {
        const result = statement();
        this.#gaveUpAt = undefined;
        return result;
      } catch (err) {
        if (!isBusy(err)) throw err;
        const now = Date.now();
        if (this.#gaveUpAt !== undefined && now - this.#gaveUpAt < this.#boundMs) throw err;
        deadline ??= now + this.#boundMs;
        if (now >= deadline) {
          this.#gaveUpAt = now;
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, deadline! - now)));
      }
    }
  }
}
