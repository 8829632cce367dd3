// A server binary run as a child for one test suite (nginx, Apache, Prometheus): started detached in its
// own process group, its output kept, up once its ports accept connections, and stopped with SIGTERM,
// then SIGKILL to the whole group; every wait is bounded and a failure says what the daemon printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { DeadlineError, exitOf, waitUntil } from './deadline.ts';

/** How long a daemon may take to exit on SIGTERM before its process group is killed. */
const STOP_GRACE_MS = 10_000;
/** The most output kept, from the end: enough to explain a failure. */
const OUTPUT_KEEP = 16_000;

export interface DaemonOptions {
  /** For messages: "nginx", "apache" … */
  name: string;
  binary: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Its own directory (configuration, logs, pid file), removed when it stops. */
  dir: string;
  /** A log file it writes besides stdout and stderr, shown in failures. */
  logFile?: string;
  /** Up once 127.0.0.1 accepts connections on each of these. */
  ports: number[];
}

export interface RunningDaemon {
  child: ChildProcess;
  /** stdout, stderr and the log file so far. */
  output(): string;
  /** The log file so far. */
  log(): string;
  stop(): Promise<void>;
}

export async function startDaemon(options: DaemonOptions): Promise<RunningDaemon> {
  // Detached: the daemon leads its own process group, so a SIGKILL reaches its workers too.
  const child = spawn(options.binary, options.args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    ...(options.env && { env: options.env }),
  });
  let printed = '';
  const keep = (chunk: Buffer) => (printed = (printed + chunk.toString()).slice(-OUTPUT_KEEP));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const log = () => (options.logFile && existsSync(options.logFile) ? readFileSync(options.logFile, 'utf8') : '');
  const output = () => `${printed}${log()}`;
  const stop = async () => {
    try {
      await terminate(child, output);
    } finally {
      rmSync(options.dir, { recursive: true, force: true });
    }
  };
  try {
    await waitForListening(child, options.name, options.ports);
  } catch (err) {
    const seen = output();
    await stop();
    throw new Error(`${options.name} did not start: ${(err as Error).message}\n${seen}`, { cause: err });
  }
  return { child, output, log, stop };
}

/**
 * SIGTERM, then SIGKILL to the whole process group if the daemon still runs after STOP_GRACE_MS; the
 * wait after the SIGKILL is bounded too, failing with what it printed.
 */
export async function terminate(child: ChildProcess, state: () => string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  try {
    await exitOf(child, STOP_GRACE_MS, state);
  } catch (err) {
    if (!(err instanceof DeadlineError)) throw err;
    process.kill(-child.pid!, 'SIGKILL');
    await exitOf(child, 5_000, () => `after SIGTERM and SIGKILL; ${state()}`);
  }
}

/** Whether a TCP connect to 127.0.0.1:`port` succeeds; a connect still pending after 2 s counts as no. */
function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const answer = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(2_000, () => answer(false));
    socket.once('connect', () => answer(true));
    socket.once('error', () => answer(false));
  });
}

async function waitForListening(child: ChildProcess, name: string, ports: number[], timeoutMs = 10_000) {
  let up: boolean[] = [];
  await waitUntil(
    async () => {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${name} exited (${child.exitCode ?? child.signalCode})`);
      up = await Promise.all(ports.map(canConnect));
      return up.every(Boolean);
    },
    timeoutMs,
    () =>
      `${name} listening on ${ports.join(', ')}; last probe: ${ports.map((p, i) => `${p} ${up[i] ? 'up' : 'down'}`).join(', ')}`,
  );
}
