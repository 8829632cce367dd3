// The process: load config, build the app, listen, and shut down gracefully on SIGTERM/SIGINT
// (stop accepting, let in-flight requests finish, close the database).
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.ts';
import type { Config } from './config/config.ts';

/** Beyond the longest webhook attempt still in flight, which the dispatcher waits for. */
const GRACE_MS = 5_000;

export async function serve(config: Readonly<Config>): Promise<void> {
  const app = await buildApp(config);
  const grace = closeWithGrace({ delay: config.webhookTimeoutMs + GRACE_MS }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
  });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    // Without this the pool, the dispatcher and the timers would keep the process alive, serving
    // nothing: a supervisor would see it running and never restart it.
    const { code, message } = err as NodeJS.ErrnoException;
    const why = code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : message;
    console.error(`signet: cannot listen on ${config.host}:${config.port}: ${why}`);
    grace.uninstall();
    await app.close().catch(() => undefined);
    process.exit(1);
  }
}
