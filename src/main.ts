// The process: load config, build the app, listen, and shut down gracefully on SIGTERM/SIGINT.
// SIGTERM (an orchestrator, a deploy): drain first, answering every new request 503 while the
// listener stays open, then stop accepting, let in-flight requests and webhook attempts finish, close
// the database. SIGINT (Ctrl-C at a terminal) skips the drain. Past the grace the process logs the
// requests it cuts and exits with code 1 (docs/operations/failure-behaviour.md).
import { setTimeout as sleep } from 'node:timers/promises';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Config } from './config/config.ts';
import { MetricsListenerError } from './http/ops/metrics.ts';
import { describeCutRequests } from './http/ops/shutdown.ts';

/** Beyond the longest webhook attempt still in flight, which the dispatcher waits for. */
const GRACE_MS = 5_000;

/**
 * How long shutdown may take before the process exits anyway: the drain, then the longest webhook attempt, then a
 * margin.
 */
function shutdownGraceMs(config: Readonly<Config>): number {
  return config.shutdownDrainMs + config.webhookTimeoutMs + GRACE_MS;
}

export async function serve(config: Readonly<Config>): Promise<void> {
  const app = await buildApp(config);
  const grace = closeWithGrace(
    { delay: shutdownGraceMs(config), onTimeout: (delay) => logForcedExit(app, delay) },
    async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'shutting down after an error');
      else app.log.info({ signal }, 'shutting down');
      app.startDraining();
      if (signal === 'SIGTERM' && !err && config.shutdownDrainMs > 0) {
        app.log.info({ drainMs: config.shutdownDrainMs }, 'draining: new requests get 503 until the listener closes');
        await sleep(config.shutdownDrainMs);
      }
      app.log.info('closing the listener; finishing the requests in flight');
      await app.close();
    },
  );
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    // Without this the pool, the dispatcher and the timers would keep the process alive, serving
    // nothing: a supervisor would see it running and never restart it.
    console.error(`signet: ${listenFailure(err, config)}`);
    grace.uninstall();
    await app.close().catch(() => undefined);
    process.exit(1);
  }
}

/** Why app.listen() failed: the API's listener, or the metrics listener (whose error names METRICS_PORT). */
function listenFailure(err: unknown, config: Readonly<Config>): string {
  if (err instanceof MetricsListenerError) return err.message;
  const { code, message } = err as NodeJS.ErrnoException;
  const why =
    code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : message;
  return `cannot listen on ${config.host}:${config.port}: ${why}`;
}

/** close-with-grace exits with code 1 right after this: say why, and which requests never got their answer. */
function logForcedExit(app: FastifyInstance, delayMs: number): void {
  const cut = describeCutRequests(app.requestsInFlight());
  app.log.error(
    { graceMs: delayMs, cut },
    `shutdown did not finish within ${delayMs} ms; exiting with code 1, cutting ${cut.length} request(s)`,
  );
}
