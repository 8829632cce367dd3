// What a start has opened so far (the database pool, the Fastify instance with its plugins' timers and
// listeners, the Redis client), closed again when the start is refused: a wrong key, a file that cannot
// be read, a failed migration. Any one of them left open keeps the process alive serving nothing, and a
// supervisor would see a running process instead of a failed start (docs/operations/failure-behaviour.md,
// "Start-up").

/** How long one resource may take to close after a refused start before the next one is closed anyway. */
const CLOSE_WAIT_MS = 2000;

interface Opened {
  what: string;
  close: () => unknown;
}

export class StartUpResources {
  readonly #opened: Opened[] = [];

  /** `close` is called at most once, and only if the start is refused. */
  add(what: string, close: () => unknown): void {
    this.#opened.push({ what, close });
  }

  /**
   * Closes everything, the last opened first, each within CLOSE_WAIT_MS; never throws (the refusal
   * is the error worth reporting). Returns what could not be closed in time or failed to close.
   */
  async closeAll(): Promise<string[]> {
    const failed: string[] = [];
    for (const { what, close } of this.#opened.splice(0).reverse()) {
      if (!(await closedWithin(close, CLOSE_WAIT_MS))) failed.push(what);
    }
    return failed;
  }
}

async function closedWithin(close: () => unknown, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(close)
        .then(
          () => true,
          () => false,
        ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
