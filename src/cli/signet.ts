// The `signet` command. Subcommands: serve, migrate.
import { ConfigError, loadConfig } from '../config/config.ts';
import { openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { serve } from '../main.ts';

const USAGE = `usage: signet <command>

commands:
  serve     start the service (HTTP API) on HOST:PORT
  migrate   apply pending database migrations and exit

Configuration comes from environment variables; see the README.`;

async function migrate(): Promise<void> {
  const config = loadConfig();
  const handle = openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
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
    case 'migrate':
      await migrate();
      return 0;
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
    console.error(err instanceof ConfigError ? `signet: invalid configuration: ${err.message}` : err);
    process.exitCode = 1;
  },
);
