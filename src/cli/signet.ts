// The `signet` command. Subcommands: serve, dispatcher, migrate, user, client, keys, receiver, demo.
import { ConfigError, loadConfig } from '../config/config.ts';
import { KeyEncryptionError } from '../auth-server/tokens/keys.ts';
import { UsageError } from './admin.ts';
import { auditCommand } from './audit.ts';
import { clientCommand, CLIENT_USAGE } from './clients.ts';
import { runDispatcher } from './dispatcher.ts';
import { keysCommand, KEYS_USAGE } from './keys.ts';
import { userCommand, USER_USAGE } from './users.ts';
import { databaseOptions, openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { adoptClusterSettings } from '../db/cluster-settings.ts';
import { serve } from '../main.ts';
import { SecretKeyError } from '../webhooks/store/secrets.ts';

const USAGE = `usage: signet <command>

commands:
  serve       start the service (HTTP API, and the webhook dispatcher) on HOST:PORT
  dispatcher  run only the webhook dispatcher (scale-out; see WEBHOOK_DISPATCHER)
  migrate     apply pending database migrations and exit; --adopt-settings: this configuration's issuer,
              audience and key-encryption key become the cluster's (docs/operations/scaling-out.md)
  user        create, list or delete users of the authorization server
  client      create, list, delete OAuth clients or rotate their secrets
  keys        list or rotate the signing keys
  audit       read the audit trail (signet audit --help)
  receiver    receive, verify and process webhooks as a consumer (signet receiver --help)
  demo        run the whole contract end to end on this machine, on a throw-away database

${USER_USAGE}

${CLIENT_USAGE}

${KEYS_USAGE}

Configuration comes from environment variables; see docs/reference/configuration.md.`;

/**
 * `signet migrate [--adopt-settings]`: applies pending migrations; with --adopt-settings, this configuration's
 * issuer, audience and key-encryption key become the cluster's (src/db/cluster-settings.ts).
 */
async function migrate(args: string[]): Promise<void> {
  const unknown = args.filter((arg) => arg !== '--adopt-settings');
  if (unknown.length > 0)
    throw new UsageError(`migrate: unknown argument ${unknown[0]} (usage: signet migrate [--adopt-settings])`);
  const config = loadConfig();
  const handle = openDatabase(config.databaseUrl, databaseOptions(config));
  try {
    const result = await migrateToLatest(handle);
    const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
    console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database is up to date');
    if (args.includes('--adopt-settings')) {
      const changed = await adoptClusterSettings(handle.db, config);
      console.log(
        changed.length > 0 ? `cluster settings adopted: ${changed.join(', ')}` : 'cluster settings unchanged',
      );
    }
  } finally {
    await handle.db.destroy();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case 'serve':
      await serve(loadConfig());
      return -1; // keeps running
    case 'dispatcher':
      await runDispatcher(loadConfig());
      return -1; // keeps running
    case 'migrate':
      await migrate(argv.slice(1));
      return 0;
    case 'user':
      return userCommand(argv.slice(1));
    case 'client':
      return clientCommand(argv.slice(1));
    case 'keys':
      return keysCommand(argv.slice(1));
    case 'audit':
      return auditCommand(argv.slice(1));
    // Loaded on demand: the consumer kit and the demo are not part of the service's start-up.
    case 'receiver':
      return (await import('./receiver.ts')).receiverCommand(argv.slice(1));
    case 'demo':
      return (await import('./demo.ts')).demoCommand(argv.slice(1));
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      console.error(`signet: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (
      err instanceof UsageError ||
      (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))
    ) {
      console.error(`signet: ${err.message}`);
      process.exitCode = 2;
      return;
    }
    if (err instanceof ConfigError) console.error(`signet: invalid configuration: ${err.message}`);
    else if (err instanceof KeyEncryptionError || err instanceof SecretKeyError)
      console.error(`signet: ${err.message}`);
    else console.error(err);
    process.exitCode = 1;
    exitIfStillRunning();
  },
);

/** Long enough for the refusal to reach a piped stderr and for what closes cleanly to close. */
const LAST_RESORT_EXIT_MS = 3000;

/**
 * The last resort after a failed command: a refused start closes what it opened (app.ts, buildApp), but
 * should anything still hold the event loop (a client a dependency opened, a timer), the process must
 * end anyway, with the code set above, or a supervisor sees a live process that serves nothing
 * (docs/operations/failure-behaviour.md, "Start-up"). The timer is unref'd: a process with nothing
 * left open exits at once, as before.
 */
function exitIfStillRunning(): void {
  setTimeout(() => {
    console.error('signet: exiting: something the failed command opened was still open');
    process.exit(process.exitCode ?? 1);
  }, LAST_RESORT_EXIT_MS).unref();
}
