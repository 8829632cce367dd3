// WAL checkpoints on a thread of their own, not inside the writer's COMMIT.
//
// SQLite's automatic checkpoint runs in the COMMIT that takes the WAL past wal_autocheckpoint pages
// (1000 by default): that COMMIT copies the WAL's pages back into the database file and syncs it. node:sqlite
// is synchronous, so the whole event loop waited: during the event purge one such COMMIT took 162 ms, and
// every request behind it waited as long (docs/benchmarks-history.md, "Checkpoints off the event loop"). The
// writer now only appends to the WAL; one worker thread per process (sqlite-checkpoint.worker.ts) runs a
// PASSIVE checkpoint of each open database file every CHECKPOINT_INTERVAL_MS, which never blocks the
// writer or a reader. The writer keeps an automatic checkpoint at WRITER_AUTOCHECKPOINT_PAGES as a
// safety net: a thread that fell behind or was lost costs a stall, never an unbounded WAL.
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import pino from 'pino';
import type { CheckpointReport, CheckpointRequest } from './sqlite-checkpoint.worker.ts';

/** How often the thread checkpoints: a create writes a few pages, so the WAL stays a few MB at most. */
const CHECKPOINT_INTERVAL_MS = 100;
/** The writer's own automatic checkpoint, only if the thread falls behind (pages of 4 KiB: 40 MB). */
export const WRITER_AUTOCHECKPOINT_PAGES = 10_000;
/** How long stopping waits for the thread to close its connection before the writer closes its own. */
const STOP_WAIT_MS = 2000;
/** How long after losing the thread it is started again (a thread that fails at once must not spin). */
const RESTART_DELAY_MS = 1000;

type Synchronous = 'NORMAL' | 'FULL';

interface CheckpointThreadOptions {
  intervalMs?: number;
  restartDelayMs?: number;
  stopWaitMs?: number;
  /** The thread's script: sqlite-checkpoint.worker.ts (tests pass one that misbehaves). */
  workerUrl?: URL;
}

const WORKER_URL = new URL('./sqlite-checkpoint.worker.ts', import.meta.url);

interface Watch {
  handles: number;
  synchronous: Synchronous;
}

export class CheckpointThread {
  readonly #intervalMs: number;
  readonly #restartDelayMs: number;
  readonly #stopWaitMs: number;
  readonly #workerUrl: URL;
  #worker: Worker | undefined;
  readonly #watched = new Map<string, Watch>();
  /** Stops waiting for the thread to close a file's connection. */
  readonly #stopping = new Map<string, Array<() => void>>();
  #log: pino.Logger | undefined;

  constructor({
    intervalMs = CHECKPOINT_INTERVAL_MS,
    restartDelayMs = RESTART_DELAY_MS,
    stopWaitMs = STOP_WAIT_MS,
    workerUrl = WORKER_URL,
  }: CheckpointThreadOptions = {}) {
    this.#intervalMs = intervalMs;
    this.#restartDelayMs = restartDelayMs;
    this.#stopWaitMs = stopWaitMs;
    this.#workerUrl = workerUrl;
  }

  /** The running thread, if any (tests end it to check that checkpoints resume). */
  get thread(): Worker | undefined {
    return this.#worker;
  }

  /**
   * Checkpoints `path` until the returned stop() has resolved; stop() before the writer closes, so
   * that the writer is the file's last connection and its close checkpoints and removes the WAL.
   */
  watch(path: string, synchronous: Synchronous): () => Promise<void> {
    const file = resolve(path);
    const watch = this.#watched.get(file);
    if (watch) watch.handles += 1;
    else {
      this.#watched.set(file, { handles: 1, synchronous });
      this.#post({ watch: file, synchronous, intervalMs: this.#intervalMs });
    }
    let stopped: Promise<void> | undefined;
    return () => (stopped ??= this.#unwatch(file));
  }

  async #unwatch(file: string): Promise<void> {
    const watch = this.#watched.get(file);
    if (!watch) return;
    watch.handles -= 1;
    if (watch.handles > 0) return;
    this.#watched.delete(file);
    const worker = this.#worker;
    if (!worker) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((done) => {
      this.#stopping.set(file, [...(this.#stopping.get(file) ?? []), done]);
      // A thread that does not answer in time is no longer waited for, and then no longer keeps itself alive.
      timer = setTimeout(() => {
        const waiting = this.#stopping.get(file)?.filter((other) => other !== done) ?? [];
        if (waiting.length > 0) this.#stopping.set(file, waiting);
        else this.#stopping.delete(file);
        done();
      }, this.#stopWaitMs);
      worker.postMessage({ unwatch: file } satisfies CheckpointRequest);
    });
    clearTimeout(timer);
    // No file left: end the thread rather than keep an idle one (the next watch starts another).
    if (this.#watched.size === 0 && this.#stopping.size === 0 && this.#worker === worker) {
      this.#worker = undefined;
      await worker.terminate();
    }
  }

  #post(request: CheckpointRequest): void {
    this.#thread().postMessage(request);
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    // No inherited flags: the thread needs none, and some a process may run with are refused in a
    // worker (`--input-type` of `node -e`, for one), which would lose the thread at every start.
    const worker = new Worker(this.#workerUrl, { execArgv: [] });
    worker.on('message', (report: CheckpointReport) => this.#onReport(report));
    worker.on('error', (err) => this.#lose(worker, `the checkpoint thread failed: ${err.message}`));
    worker.on('exit', (code) => this.#lose(worker, `the checkpoint thread exited (${code})`));
    // Checkpoints never keep the process up. After the listeners: a 'message' listener refs the thread again.
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #onReport(report: CheckpointReport): void {
    if ('unwatched' in report) {
      for (const done of this.#stopping.get(report.unwatched) ?? []) done();
      this.#stopping.delete(report.unwatched);
      return;
    }
    this.#logger().warn(
      { file: report.failed, err: { message: report.message } },
      'a WAL checkpoint failed; the writer checkpoints the file itself once its WAL is large',
    );
  }

  /** A thread lost while files are open is started again after a pause, with every file it had. */
  #lose(worker: Worker, why: string): void {
    if (this.#worker !== worker) return; // ended on purpose, or already replaced
    this.#worker = undefined;
    for (const waiting of this.#stopping.values()) for (const done of waiting) done();
    this.#stopping.clear();
    this.#logger().warn({ reason: why }, 'the WAL checkpoint thread was lost; starting another');
    setTimeout(() => {
      if (this.#worker) return;
      for (const [file, { synchronous }] of this.#watched)
        this.#post({ watch: file, synchronous, intervalMs: this.#intervalMs });
    }, this.#restartDelayMs).unref();
  }

  #logger(): pino.Logger {
    return (this.#log ??= pino({ name: 'signet-db' }));
  }
}

/** The process's one checkpoint thread, shared by every SQLite database it opens. */
export const checkpointThread = new CheckpointThread();
