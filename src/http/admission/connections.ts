// Client connections (docs/operations/failure-behaviour.md, "Connections"): a cap, so that idle or slow connections
// cannot take every file descriptor (past the open-file limit accept() fails, and so do the database, Redis, webhook
// and log writes that need a descriptor of their own), and a cap that idle connections cannot fill to lock clients
// out. At the cap, a new connection closes the connection that has been idle longest (one that never sent a byte, or
// a keep-alive connection between requests) and is served; only when every connection has a request in flight is the
// new one closed at once. The timeouts that end idle connections on their own are the server's (server-timeouts.ts).
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';

/** One warning per this interval while connections are being closed for the cap, with the counts. */
const WARN_INTERVAL_MS = 10_000;

/**
 * The connections, and among them the idle ones in the order they became idle (a Map keeps insertion order): the
 * oldest idle connection is the first key, found in O(1) whatever the number of connections.
 */
class ConnectionTable {
  readonly #inFlight = new Map<Socket, number>();
  readonly #idle = new Map<Socket, true>();

  get size(): number {
    return this.#inFlight.size;
  }

  opened(socket: Socket): void {
    this.#inFlight.set(socket, 0);
    this.#idle.set(socket, true);
  }

  closed(socket: Socket): void {
    this.#inFlight.delete(socket);
    this.#idle.delete(socket);
  }

  requestStarted(socket: Socket): void {
    const count = this.#inFlight.get(socket);
    if (count === undefined) return;
    this.#inFlight.set(socket, count + 1);
    this.#idle.delete(socket);
  }

  /** Idle again after its last response: to the end of the idle order. */
  requestEnded(socket: Socket): void {
    const count = this.#inFlight.get(socket);
    if (count === undefined) return;
    this.#inFlight.set(socket, Math.max(0, count - 1));
    if (count <= 1) this.#idle.set(socket, true);
  }

  oldestIdle(except: Socket): Socket | undefined {
    for (const socket of this.#idle.keys()) if (socket !== except) return socket;
    return undefined;
  }
}

/** Counts what the cap did, and says so in the log at most every WARN_INTERVAL_MS. */
function capReporter(maxConnections: number, log: FastifyBaseLogger) {
  let evicted = 0;
  let refused = 0;
  let warnedAt = 0;
  return (what: 'evicted' | 'refused', err?: NodeJS.ErrnoException): void => {
    if (what === 'evicted') evicted++;
    else refused++;
    const now = Date.now();
    if (now - warnedAt < WARN_INTERVAL_MS) return;
    warnedAt = now;
    const detail = err && { code: err.code, message: err.message };
    log.warn(
      { evicted, refused, maxConnections, err: detail },
      err
        ? 'client connections refused: accept failed'
        : `MAX_CONNECTIONS (${maxConnections}) reached: closed the longest idle connections for new ones (evicted), or the new ones when none was idle (refused)`,
    );
    evicted = 0;
    refused = 0;
  };
}

export function capConnections(server: Server, maxConnections: number, log: FastifyBaseLogger): void {
  const table = new ConnectionTable();
  const report = capReporter(maxConnections, log);
  server.on('connection', (socket: Socket) => {
    table.opened(socket);
    socket.once('close', () => table.closed(socket));
    if (table.size <= maxConnections) return;
    const idle = table.oldestIdle(socket);
    if (idle) {
      idle.destroy();
      table.closed(idle); // at once: its 'close' comes on a later tick, after more connections may have arrived
      report('evicted');
    } else {
      socket.destroy();
      table.closed(socket);
      report('refused');
    }
  });
  server.on('request', (request: { socket: Socket }, response: { once(event: 'close', f: () => void): void }) => {
    table.requestStarted(request.socket);
    response.once('close', () => table.requestEnded(request.socket));
  });
  // accept() failing (EMFILE, ENFILE when the descriptors run out anyway) is an 'error' on the server:
  // unheard, it would end the process. libuv has already closed the pending connection.
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.syscall === 'accept') return report('refused', err);
    if (server.listening) log.error({ err }, 'server error');
  });
}
