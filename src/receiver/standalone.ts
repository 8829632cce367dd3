// What `signet receiver` runs: a Fastify server with the receiver plugin, a durable inbox, a worker
// running the consumer's handler (by default, one JSON line per processed event), and optionally a
// reconciler reading the producer's event list.
import Fastify from 'fastify';
import pino from 'pino';
import type { AddressInfo } from 'node:net';
import type { EventHandler, ReceivedEvent } from './event.ts';
import { openInbox, type Inbox } from './inbox.ts';
import { frameworkErrorProblem, receiverPlugin, strayRequestProblem } from './fastify-plugin.ts';
import { Reconciler } from './reconciler.ts';
import { InboxWorker, type WorkerLog } from './worker.ts';

export interface StandaloneOptions {
  port: number;
  host?: string;
  sources: Record<string, readonly string[]>;
  database?: string;
  handler?: EventHandler;
  /** Where the default handler writes its JSON lines (stdout by default). */
  out?: NodeJS.WritableStream;
  headerName?: string;
  toleranceMs?: number;
  retryScheduleMs?: readonly number[];
  reconcile?: {
    from: string;
    clientId: string;
    clientSecret: string;
    source: string;
    types?: string[];
    intervalMs?: number;
  };
  /** pino level of the receiver's own log on stderr (default info; `silent` for embedding, as the demo does). */
  logLevel?: pino.LevelWithSilent;
}

export interface StandaloneReceiver {
  url: string;
  inbox: Inbox;
  /** Wake it after enqueuing from outside (a reconciler of your own), so processing starts at once. */
  worker: InboxWorker;
  close(): Promise<void>;
}

export const DEFAULT_DATABASE = 'sqlite:./signet-receiver.db';

/** One line per event, written before the entry counts as done (the write callback). */
export function jsonLinesHandler(out: NodeJS.WritableStream): EventHandler {
  return (event: ReceivedEvent) =>
    new Promise<void>((resolve, reject) => {
      out.write(`${JSON.stringify(event)}\n`, (error) => (error ? reject(error) : resolve()));
    });
}

export async function startStandaloneReceiver(options: StandaloneOptions): Promise<StandaloneReceiver> {
  // Logs go to stderr: stdout may carry the JSON lines of processed events.
  const logger = pino({ name: 'signet-receiver', level: options.logLevel ?? 'info' }, pino.destination(2));
  const log: WorkerLog = (msg, extra) => logger.info(extra ?? {}, msg);
  const inbox = await openInbox(options.database ?? DEFAULT_DATABASE);
  const worker = new InboxWorker({
    inbox,
    handler: options.handler ?? jsonLinesHandler(options.out ?? process.stdout),
    retryScheduleMs: options.retryScheduleMs,
    log,
  });
  const reconciler = options.reconcile
    ? new Reconciler({ ...options.reconcile, inbox, onEnqueued: () => worker.wake(), log })
    : undefined;
  // Fastify logs each request at info; at warn it does not: a request log would record the headers
  // (signatures) of every delivery. Faults still reach the logger through the plugin's error handler,
  // without the body.
  const app = Fastify({
    loggerInstance: logger.child({}, { level: logger.level === 'silent' ? 'silent' : 'warn' }),
    frameworkErrors: frameworkErrorProblem,
  });
  app.setNotFoundHandler(strayRequestProblem);
  await app.register(receiverPlugin, {
    sources: options.sources,
    inbox,
    worker,
    headerName: options.headerName,
    toleranceMs: options.toleranceMs,
  });
  try {
    await app.listen({ port: options.port, host: options.host ?? '127.0.0.1' });
  } catch (error) {
    await inbox.close();
    throw error;
  }
  worker.start();
  reconciler?.start();
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    inbox,
    worker,
    async close() {
      await reconciler?.stop();
      await app.close();
      await worker.stop();
      await inbox.close();
    },
  };
}
