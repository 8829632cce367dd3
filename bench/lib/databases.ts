// The benchmarks' databases: a fresh SQLite file, or a fresh PostgreSQL database on the server that
// BENCH_POSTGRES_URL names (created here, dropped after), so a run never shares rows with another run or
// with the test suite. Separate from test/helpers on purpose: the suite's databases are templates tuned
// for its speed, a benchmark's are cold and its own.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export type BenchDialect = 'sqlite' | 'postgres';

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** WEBHOOK_SECRET_KEY of benchmark servers (32 fixed bytes: PostgreSQL needs one configured). */
export const BENCH_WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString('base64url');

/** `postgresUrl` is any database on the server (the maintenance one will do): a new one is made beside it. */
export async function createBenchDatabase(
  dialect: BenchDialect,
  postgresUrl = process.env.BENCH_POSTGRES_URL,
): Promise<BenchDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'signet-bench-'));
    return { url: `sqlite:${join(dir, 'signet.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!postgresUrl) throw new Error('a PostgreSQL benchmark needs BENCH_POSTGRES_URL');
  const name = `signet_bench_${randomBytes(5).toString('hex')}`;
  await onServer(postgresUrl, `create database ${name}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => onServer(postgresUrl, `drop database if exists ${name} with (force)`) };
}

async function onServer(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
