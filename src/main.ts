// The process: load config, build the app, listen, and shut down gracefully on SIGTERM/SIGINT
// (stop accepting, let in-flight requests finish, close the database).
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.ts';
import type { Config } from './config/config.ts';

/** Beyond the longest webhook attempt still in flight, which the dispatcher waits for. */
const GRACE_MS = 5_000;

export async function serve(config: Readonly<Config>): Promise<void> {
  const app = await buildApp(config);
  closeWithGrace({ delay: config.webhookTimeoutMs + GRACE_MS }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
  });
  await app.listen({ host: config.host, port: config.port });
}
