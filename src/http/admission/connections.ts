// A cap on open client connections, so that idle or slow connections cannot take every file
// descriptor: past the open-file limit, accept() fails, and so do the database, Redis, webhook and
// log writes that need a descriptor of their own. Node closes a connection over the cap as soon as
// it is accepted (net.Server#maxConnections), before any byte is read. The default cap comes from
// config/descriptors.ts.
import type { Server } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';

/** One warning per this interval while connections are being refused, with the count. */
const WARN_INTERVAL_MS = 10_000;

export function capConnections(server: Server, maxConnections: number, log: FastifyBaseLogger): void {
  server.maxConnections = maxConnections;
  let refused = 0;
  let warnedAt = 0;
  const note = (reason: string, err?: Error): void => {
    refused++;
    const now = Date.now();
    if (now - warnedAt < WARN_INTERVAL_MS) return;
    warnedAt = now;
    const { code, message } = (err ?? {}) as NodeJS.ErrnoException;
    log.warn({ refused, maxConnections, err: err && { code, message } }, `client connections refused: ${reason}`);
    refused = 0;
  };
  server.on('drop', () => note(`MAX_CONNECTIONS (${maxConnections}) reached`));
  // accept() failing (EMFILE, ENFILE when the descriptors run out anyway) is an 'error' on the server:
  // unheard, it would end the process. libuv has already closed the pending connection.
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.syscall === 'accept') return note('accept failed', err);
    if (server.listening) log.error({ err }, 'server error');
  });
}
