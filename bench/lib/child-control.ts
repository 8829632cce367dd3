// The control channel every benchmark server process speaks with its parent: measurement windows
// (CPU time and event-loop utilisation of this process, HTTP requests served, bytes written to storage,
// with BENCH_PROFILE_DIR a CPU profile of exactly that window and with BENCH_SQLITE_TIMING the time of each
// SQLite statement in it) and shutdown (on request, parent gone, SIGINT or SIGTERM). Shared by
// bench/api/server.ts, bench/auth/auth-server.ts, bench/webhooks/webhooks-server.ts and bench/webhooks/webhooks-receiver.ts; a child
// may listen for messages of its own besides these (the control handler ignores types it does not know).
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export type MeasuredMessage = {
  type: 'measured';
  label: string;
  cpuUserUs: number;
  cpuSystemUs: number;
  elapsedMs: number;
  eventLoopUtilization: number;
  requests: number;
  /** Bytes this process sent to storage in the window (Linux /proc/self/io write_bytes; NaN elsewhere). */
  storageWriteBytes: number;
  profile: string | undefined;
};
export type ControlReply = { type: 'measure-started' } | MeasuredMessage | { type: 'error'; message: string };
export type ControlMessage =
  { type: 'measure-start'; label: string } | { type: 'measure-stop'; label: string } | { type: 'shutdown' };

export interface ChildControlOptions {
  requestCount: () => number;
  shutdown: (code: number) => Promise<never>;
}

const profileDir = process.env.BENCH_PROFILE_DIR || undefined;
// Loaded only when asked for: it patches node:sqlite's prototypes (bench/lib/sqlite-timing.ts).
const sqliteTiming = process.env.BENCH_SQLITE_TIMING
  ? (await import('./sqlite-timing.ts')).installSqliteTiming(process.env.BENCH_SQLITE_TIMING)
  : undefined;
const heapProfile = profileDir !== undefined && process.env.BENCH_HEAP_PROFILE === '1';

/** Bytes this process has caused to be sent to storage (the WAL and database files, fsync or not). */
function storageWriteBytes(): number {
  try {
    return Number(/^write_bytes: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

export function sendToParent(message: unknown): void {
  if (process.send) process.send(message);
  else console.log(JSON.stringify(message));
}

export function serveChildControl(options: ChildControlOptions): void {
  let session: Session | undefined;
  let window:
    | {
        cpu: NodeJS.CpuUsage;
        elu: ReturnType<typeof performance.eventLoopUtilization>;
        startedAt: number;
        requests: number;
        written: number;
      }
    | undefined;

  const measureStart = async (): Promise<void> => {
    if (profileDir) {
      session ??= new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 200 });
      await session.post('Profiler.start');
      if (heapProfile) {
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling', {
          samplingInterval: 8192,
          includeObjectsCollectedByMinorGC: true,
          includeObjectsCollectedByMajorGC: true,
        } as never);
      }
    }
    window = {
      cpu: process.cpuUsage(),
      elu: performance.eventLoopUtilization(),
      startedAt: performance.now(),
      requests: options.requestCount(),
      written: storageWriteBytes(),
    };
    sqliteTiming?.reset();
  };

  const measureStop = async (label: string): Promise<MeasuredMessage> => {
    if (!window) throw new Error('measure-stop without measure-start');
    const cpu = process.cpuUsage(window.cpu);
    const elu = performance.eventLoopUtilization(window.elu);
    const elapsedMs = performance.now() - window.startedAt;
    const requests = options.requestCount() - window.requests;
    const written = storageWriteBytes() - window.written;
    window = undefined;
    sqliteTiming?.write(label, requests);
    let profile: string | undefined;
    if (profileDir && session) {
      if (heapProfile) {
        const { profile: heap } = await session.post('HeapProfiler.stopSampling');
        await session.post('HeapProfiler.disable');
        writeFileSync(join(profileDir, `${label}.heapprofile`), JSON.stringify(heap));
      }
      const { profile: data } = await session.post('Profiler.stop');
      await session.post('Profiler.disable');
      session.disconnect();
      profile = join(profileDir, `${label}.cpuprofile`);
      writeFileSync(profile, JSON.stringify(data));
    }
    return {
      type: 'measured',
      label,
      cpuUserUs: cpu.user,
      cpuSystemUs: cpu.system,
      elapsedMs,
      eventLoopUtilization: elu.utilization,
      requests,
      storageWriteBytes: written,
      profile,
    };
  };

  process.on('message', (message: ControlMessage) => {
    const handle = async () => {
      if (message.type === 'measure-start') {
        await measureStart();
        sendToParent({ type: 'measure-started' });
      } else if (message.type === 'measure-stop') {
        sendToParent(await measureStop(message.label));
      } else if (message.type === 'shutdown') {
        await options.shutdown(0);
      }
    };
    handle().catch((err: Error) => sendToParent({ type: 'error', message: err.stack ?? err.message }));
  });
  process.on('disconnect', () => void options.shutdown(0)); // parent gone: never leave a server or a database behind
  process.on('SIGINT', () => void options.shutdown(130));
  process.on('SIGTERM', () => void options.shutdown(143));
}

/** Shutdown of a child that serves apps on throw-away databases: close them all, drop the databases, exit. */
export function closeAppsAndDrop(
  apps: readonly { close(): Promise<unknown> }[],
  databases: readonly { drop(): Promise<void> }[],
): (code: number) => Promise<never> {
  return async (code) => {
    for (const app of apps) await app.close().catch(() => undefined);
    for (const db of databases)
      await db.drop().catch((err) => console.error(`could not drop a benchmark database: ${(err as Error).message}`));
    process.exit(code);
  };
}

// ---------------------------------------------------------------------------------------------
// Parent side
// ---------------------------------------------------------------------------------------------

export interface BenchChild<M extends { type: string }, Out extends { type: string } = ControlMessage> {
  /** The child's `ready` message. */
  ready: Extract<M, { type: 'ready' }>;
  /** Sends a control message (or one of the child's own, `Out`) and waits for the reply of type `expect`. */
  request(message: ControlMessage | Out, expect: M['type']): Promise<M>;
  stop(): Promise<void>;
}

/** Forks a benchmark server script and waits for its `ready` message; an `error` message or an exit rejects every wait. */
export async function forkBenchChild<M extends { type: string }, Out extends { type: string } = ControlMessage>(
  script: string,
  env: Record<string, string>,
  name: string,
  stopTimeoutMs = 15_000,
): Promise<BenchChild<M, Out>> {
  const child: ChildProcess = fork(script, [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiters: Array<{ type: M['type']; resolve: (m: M) => void; reject: (e: Error) => void }> = [];
  child.on('message', (message: M | { type: 'error'; message: string }) => {
    if (message.type === 'error') {
      for (const w of waiters.splice(0)) w.reject(new Error(`${name}: ${(message as { message: string }).message}`));
      return;
    }
    const index = waiters.findIndex((w) => w.type === message.type);
    if (index >= 0) waiters.splice(index, 1)[0]!.resolve(message as M);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code) => {
    for (const w of waiters.splice(0)) w.reject(new Error(`${name} exited (${code})`));
  });
  const wait = (type: M['type']) => new Promise<M>((resolve, reject) => waiters.push({ type, resolve, reject }));
  const ready = (await wait('ready')) as Extract<M, { type: 'ready' }>;
  return {
    ready,
    request: (message, expect) => {
      const reply = wait(expect);
      child.send(message);
      return reply;
    },
    stop: async () => {
      if (child.exitCode === null && child.connected) child.send({ type: 'shutdown' } satisfies ControlMessage);
      await Promise.race([exited, new Promise((r) => setTimeout(r, stopTimeoutMs))]);
      if (child.exitCode === null) child.kill('SIGTERM');
      // A child whose event loop never turns (a livelock) cannot run its SIGTERM handler either.
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) {
        console.error(`${name} did not exit; killed (its temporary databases may be left behind)`);
        child.kill('SIGKILL');
      }
    },
  };
}
