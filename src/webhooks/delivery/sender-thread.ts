// The dispatcher's HTTP attempts on a worker thread: undici (connections, HTTP/1.1 framing, the reply)
// costs more of the event loop than anything else the dispatcher does, and the API shares that loop
// when the dispatcher runs inside `signet serve`. The thread runs an ordinary CallbackClient; the
// dispatcher keeps everything durable (claims, leases, outcomes) on its own thread, so a lost thread
// loses no delivery: its attempts in flight are failed attempts, recorded and retried on schedule.
//
// Requests and results cross in batches (one message per event-loop turn each way, not one per
// delivery): posting a message costs about as much as a small request would.
import { Worker } from 'node:worker_threads';
import type { AttemptResult, CallbackClientSettings } from './callback-client.ts';
import type { SenderRequest, SenderResult, SenderSettings } from './sender.worker.ts';

/** How long close() waits for the thread to abort what is in flight and report it. */
const CLOSE_WAIT_MS = 5000;

export class ThreadedCallbackClient {
  readonly #settings: SenderSettings;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, (result: AttemptResult) => void>();
  #nextId = 0;
  #batch: SenderRequest[] = [];
  #closed = false;

  constructor(settings: Omit<CallbackClientSettings, 'policy'> & { allowedNetworks: readonly string[] }) {
    this.#settings = { ...settings, allowedNetworks: [...settings.allowedNetworks] };
  }

  post(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    if (this.#closed) return Promise.resolve(lost('the sender thread is closed'));
    const id = this.#nextId++;
    if (this.#pending.size === 0) this.#worker?.ref(); // an attempt in flight keeps the process up
    if (this.#batch.length === 0) queueMicrotask(() => this.#flush());
    this.#batch.push({ id, url, headers, body });
    return new Promise((resolve) => this.#pending.set(id, resolve));
  }

  /** Aborts what is still in flight (each such attempt resolves as a failure), then ends the thread. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#flush(); // what was posted in this turn goes too, to be aborted with the rest
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    let timer: NodeJS.Timeout | undefined;
    const closed = new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      timer = setTimeout(resolve, CLOSE_WAIT_MS);
    });
    worker.postMessage({ close: true });
    await closed;
    clearTimeout(timer);
    await worker.terminate();
    this.#failAll('the sender thread was closed');
  }

  #flush(): void {
    const batch = this.#batch;
    this.#batch = [];
    if (batch.length > 0) this.#thread().postMessage({ requests: batch });
  }

  /**
   * Started on first use (a process that never delivers never pays for it; the first attempt waits for
   * the thread to load, once), and again after a thread was lost.
   */
  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./sender.worker.ts', import.meta.url), { workerData: this.#settings });
    worker.on('message', (message: { results: SenderResult[] }) => {
      for (const [id, result] of message.results) {
        this.#pending.get(id)?.(result);
        this.#pending.delete(id);
      }
      if (this.#pending.size === 0) worker.unref();
    });
    const lose = (why: string) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#failAll(why);
    };
    worker.on('error', (err) => lose(`the sender thread failed: ${err.message}`));
    worker.on('exit', (code) => lose(`the sender thread exited (${code})`));
    // An idle sender thread must not keep the process up; one with attempts in flight does (post).
    if (this.#pending.size === 0) worker.unref();
    this.#worker = worker;
    return worker;
  }

  #failAll(why: string): void {
    for (const resolve of this.#pending.values()) resolve(lost(why));
    this.#pending.clear();
  }
}

/** An attempt whose outcome is unknown: it may or may not have arrived, so it is retried (at least once). */
function lost(detail: string): AttemptResult {
  return {
    ok: false,
    statusCode: null,
    durationMs: 0,
    errorKind: 'connection',
    errorDetail: detail,
    responseExcerpt: null,
    retryAfterMs: undefined,
    gone: false,
  };
}
