// PostgreSQL LISTEN on one channel: every process of a cluster hears a NOTIFY at once (a committed outbox
// row, a rotated signing key). If the connection drops it reconnects, and reports once more when it listens
// again, since whatever was notified meanwhile was missed: the caller's poll covers the gap as well.
import pg from 'pg';

const RECONNECT_MS = 1000;
/** Connecting and LISTEN are bounded: a server that stops answering would otherwise leave the listener waiting, never retrying. */
const TIMEOUT_MS = 5000;
/** TCP keepalive on the otherwise idle connection: a server host that vanished is noticed, and the connection replaced. */
const KEEPALIVE_MS = 10_000;

export interface NotificationListener {
  close(): Promise<void>;
}

/** What the listener logs to (a pino or Fastify logger fits). */
export interface ListenerLog {
  warn(details: object, message: string): void;
}

/**
 * Calls `onNotify` for each NOTIFY on `channel` (a fixed identifier of ours, never user input), and once
 * after each (re)connection. `name` says who listens, in the log lines.
 */
export function listenForNotifications(
  databaseUrl: string,
  channel: string,
  onNotify: () => void,
  log: ListenerLog,
  name: string,
): NotificationListener {
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
    next.on('notification', () => onNotify());
    // Listened for as long as the client lives: a lost connection (a terminated backend, a restart, a
    // reset) must never become an uncaught 'error'.
    next.on('error', (err) => {
      log.warn({ err }, `${name} lost its connection; reconnecting`);
      next.end().catch(() => {});
      schedule();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
      if (closed) return void (await next.end());
      client = next;
      onNotify(); // anything notified while we were not listening
    } catch (err) {
      log.warn({ err }, `${name} could not connect; retrying`);
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
