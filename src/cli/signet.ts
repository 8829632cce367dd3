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
import { serve } from '../main.ts';
import { SecretKeyError } from '../webhooks/store/secrets.ts';

const USAGE = `usage: signet <command>

commands:
  serve       start the service (HTTP API, and the webhook dispatcher) on HOST:PORT
  dispatcher  run only the webhook dispatcher (scale-out; see WEBHOOK_DISPATCHER)
  migrate     apply pending database migrations and exit
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

async function migrate(): Promise<void> {
  const config = loadConfig();
  const handle = openDatabase(config.databaseUrl, databaseOptions(config));
  try {
    const result = await migrateToLatest(handle);
    const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
    console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database is up to date');
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
      await migrate();
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
  },
);
