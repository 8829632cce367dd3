// Shared plumbing of the administrative subcommands: open and migrate the configured database, print
// results as text or as JSON (`--json`, for scripts), and report usage errors with exit code 2.
import { loadConfig, type Config } from '../config/config.ts';
import { databaseOptions, openDatabase, type DatabaseHandle } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';

export class UsageError extends Error {}

export async function withDatabase<T>(
  run: (handle: DatabaseHandle, config: Readonly<Config>) => Promise<T>,
): Promise<T> {
  const config = loadConfig();
  const handle = openDatabase(config.databaseUrl, databaseOptions(config));
  try {
    await migrateToLatest(handle);
    return await run(handle, config);
  } finally {
    await handle.db.destroy();
  }
}

export function output(json: boolean, value: unknown, text: string): void {
  console.log(json ? JSON.stringify(value, null, 2) : text);
}

export async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('--password-stdin reads the password from standard input: pipe it in');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** A list option given as repeated flags and/or comma/space separated values. */
export function listOption(values: string | string[] | undefined, separator: RegExp = /[,\s]+/): string[] {
  const all = Array.isArray(values) ? values : values === undefined ? [] : [values];
  return all
    .flatMap((v) => v.split(separator))
    .map((v) => v.trim())
    .filter(Boolean);
}
