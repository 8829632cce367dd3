// The worker side of sqlite-checkpointer.ts: a connection of its own to each watched database file,
// each running a PASSIVE checkpoint on a timer. A PASSIVE checkpoint copies what it can of the WAL back
// into the database file without waiting for, or blocking, the writer or any reader
// (https://sqlite.org/c3ref/wal_checkpoint_v2.html); the writer restarts the WAL from its start at its
// next transaction once every frame has been copied (https://sqlite.org/wal.html#ckpt).
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { parentPort } from 'node:worker_threads';

export type CheckpointRequest =
  { watch: string; synchronous: 'NORMAL' | 'FULL'; intervalMs: number } | { unwatch: string };

export type CheckpointReport = { unwatched: string } | { failed: string; message: string };

interface Watched {
  db: DatabaseSync;
  checkpoint: StatementSync;
  timer: NodeJS.Timeout;
  /** The last failure reported, so that a lasting one is logged once, not at every tick. */
  lastFailure: string | undefined;
}

if (parentPort) serve(parentPort);

function serve(port: NonNullable<typeof parentPort>): void {
  const watched = new Map<string, Watched>();
  const report = (message: CheckpointReport) => port.postMessage(message);
  port.on('message', (request: CheckpointRequest) => {
    if ('watch' in request) {
      if (watched.has(request.watch)) return;
      try {
        watched.set(request.watch, open(request.watch, request.synchronous, request.intervalMs, report));
      } catch (err) {
        report({ failed: request.watch, message: (err as Error).message });
      }
      return;
    }
    const entry = watched.get(request.unwatch);
    watched.delete(request.unwatch);
    if (entry) {
      clearInterval(entry.timer);
      entry.db.close();
    }
    report({ unwatched: request.unwatch });
  });
}

function open(
  path: string,
  synchronous: 'NORMAL' | 'FULL',
  intervalMs: number,
  report: (message: CheckpointReport) => void,
): Watched {
  const db = new DatabaseSync(path);
  // A checkpoint syncs by the checkpointing connection's setting: the writer's, so that a WAL restarted
  // after this checkpoint never held the only copy of a committed page (https://sqlite.org/pragma.html#pragma_synchronous).
  db.exec(`PRAGMA synchronous = ${synchronous}; PRAGMA busy_timeout = 0;`);
  const entry: Watched = {
    db,
    checkpoint: db.prepare('PRAGMA wal_checkpoint(PASSIVE)'),
    timer: setInterval(() => {
      try {
        entry.checkpoint.get();
        entry.lastFailure = undefined;
      } catch (err) {
        const message = (err as Error).message;
        if (message !== entry.lastFailure) report({ failed: path, message });
        entry.lastFailure = message;
      }
    }, intervalMs),
    lastFailure: undefined,
  };
  return entry;
}
