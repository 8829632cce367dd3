// PostgreSQL LISTEN on the outbox's channel: every dispatcher process hears about committed
// deliveries at once. If the connection drops it reconnects; the dispatcher's poll covers the gap.
import pg from 'pg';
import type { FastifyBaseLogger as BaseLogger } from 'fastify';
import { WAKE_CHANNEL } from '../outbox/events.outbox.ts';

const RECONNECT_MS = 1000;
/** Connecting and LISTEN are bounded: a server that stops answering would otherwise leave the listener waiting, never retrying. */
const TIMEOUT_MS = 5000;
/** TCP keepalive on the otherwise idle connection: a server host that vanished is noticed, and the connection replaced. */
const KEEPALIVE_MS = 10_000;

export interface CommitListener {
  close(): Promise<void>;
}

export function listenForCommits(databaseUrl: string, onCommit: () => void, log: BaseLogger): CommitListener {
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({
      connectionString: databaseUrl,
      connectionTimeoutMillis: TIMEOUT_MS,
      query_timeout: TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_MS,
    });
    next.on('notification', () => onCommit());
    // Listened for as long as the client lives: a lost connection (a terminated backend, a restart, a
    // reset) must never become an uncaught 'error'.
    next.on('error', (err) => {
      log.warn({ err }, 'webhook commit listener lost its connection; reconnecting');
      next.end().catch(() => {});
      schedule();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${WAKE_CHANNEL}`);
      if (closed) return void (await next.end());
      client = next;
      onCommit(); // anything committed while we were not listening
    } catch (err) {
      log.warn({ err }, 'webhook commit listener could not connect; retrying');
      next.end().catch(() => {});
      schedule();
    }
  };
  const schedule = (): void => {
    if (closed || retry) return;
    client = undefined;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, RECONNECT_MS);
    retry.unref();
  };
  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
