// Deadlines for every wait in the suite. A wait that can only end by an event (a child's exit, a log
// line, a socket closing, a delivery arriving) must also end by a clock, and its failure must say what
// was awaited and what was seen instead: the runner's own per-test timeout only says "timed out".
import type { ChildProcess, SpawnSyncReturns } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo, Server } from 'node:net';

/** What a failed wait reports; a function so that the state is read when the deadline passes, not before. */
export type Description = string | (() => string);

function describeNow(what: Description): string {
  return typeof what === 'function' ? what() : what;
}

/** The error a passed deadline rejects with, so a test can tell it from the awaited operation's own failure. */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
}

/**
 * `promise`, or a DeadlineError naming `what` once `ms` have passed. The timer is cleared either way,
 * so a settled wait never keeps the process alive.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: Description): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`no result within ${ms} ms: ${describeNow(what)}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** However little is left of a poll's deadline, one evaluation of its condition may take this long. */
const LAST_EVALUATION_MS = 5000;

/**
 * Polls `condition` every `pollMs` (20 ms; 0: on the next turn of the event loop, for a state that changes
 * within a turn or two) until it holds; never a fixed sleep. Each evaluation is itself bounded (by what is
 * left of the deadline, or LAST_EVALUATION_MS if more), so a condition that awaits a stalled request
 * cannot outlive the deadline by more than that. A condition that throws ends the wait with its error.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  describe: () => string = () => 'condition',
  pollMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const fail = (): string => `timed out after ${timeoutMs} ms: ${describe()}`;
  for (;;) {
    const left = Math.max(deadline - Date.now(), LAST_EVALUATION_MS);
    if (await withDeadline(Promise.resolve(condition()), left, fail)) return;
    if (Date.now() > deadline) throw new DeadlineError(fail());
    await new Promise((resolve) => (pollMs === 0 ? setImmediate(resolve) : setTimeout(resolve, pollMs)));
  }
}

/**
 * The child's exit code (null when a signal ended it), within `ms`; the failure carries `state`,
 * typically the child's output so far. Resolves at once for a child that has already exited.
 */
export function exitOf(child: ChildProcess, ms: number, state: Description = ''): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return withDeadline(exited, ms, () => {
    const seen = describeNow(state);
    return `process ${child.pid} (${child.spawnargs.join(' ')}) still running${seen ? `; output:\n${seen}` : ''}`;
  });
}

/** How long a `signet` command run with spawnSync may take before it is killed (spawnSync's `timeout`). */
export const COMMAND_TIMEOUT_MS = 60_000;

/** A spawnSync result for an assertion message: how it ended, then its stderr and stdout. */
export function outcome(result: SpawnSyncReturns<string>): string {
  let ended = `exit ${result.status}`;
  if (result.error) ended = `did not finish: ${result.error.message}`;
  else if (result.signal) ended = `killed by ${result.signal}`;
  return `${ended}\nstderr: ${result.stderr || '(empty)'}\nstdout: ${result.stdout || '(empty)'}`;
}

/**
 * Listens on 127.0.0.1 (port 0: a free one) and resolves with the port. A listen error rejects (a bare
 * `listen(…, resolve)` would wait for ever on it), and so does a listen that takes longer than 10 s.
 */
export async function listenOnLoopback(server: Server, port = 0): Promise<number> {
  server.listen(port, '127.0.0.1');
  await withDeadline(once(server, 'listening'), 10_000, `listening on 127.0.0.1:${port}`);
  return (server.address() as AddressInfo).port;
}

/**
 * Closes `server` within 10 s; a connection still open past that fails naming `what`. A server that is
 * not listening (closed already) counts as closed, as with `close(() => resolve())`.
 */
export function closeWithin(server: Server, what: Description): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  return withDeadline(closed, 10_000, () => `closing ${describeNow(what)}: connections still open`);
}
