// `signet dispatcher`: the webhook dispatcher alone, for scale-out (run `signet serve` with
// WEBHOOK_DISPATCHER=false and as many of these as needed against one PostgreSQL).
import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import type { Config } from '../config/config.ts';
import { databaseOptions, openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { createWebhookRuntime } from '../webhooks/runtime.ts';

export async function runDispatcher(config: Readonly<Config>): Promise<void> {
  const log = pino({ level: config.logLevel });
  const handle = openDatabase(config.databaseUrl, databaseOptions(config));
  // A refusal (a lost webhook key file, a wrong WEBHOOK_SECRET_KEY) closes the pool, so the process
  // exits at once instead of waiting for idle PostgreSQL connections to time out.
  const runtime = await migrateToLatest(handle)
    .then(() => createWebhookRuntime(config, handle, log, { dispatch: true }))
    .catch(async (err: unknown) => {
      await handle.db.destroy();
      throw err;
    });
  closeWithGrace({ delay: config.webhookTimeoutMs + 5000 }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'dispatcher stopping after an error');
    else log.info({ signal }, 'dispatcher stopping');
    await runtime.stop();
    await handle.db.destroy();
  });
  runtime.start();
  log.info({ concurrency: config.webhookConcurrency, dialect: handle.dialect }, 'webhook dispatcher started');
}
