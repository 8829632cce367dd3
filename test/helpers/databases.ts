// The dialects every database-backed test runs on: SQLite always; PostgreSQL when TEST_POSTGRES_URL
// is set. With TEST_POSTGRES_REQUIRED=1 an unreachable PostgreSQL fails the suite instead of
// silently testing SQLite alone. Each app gets its own SQLite file or PostgreSQL schema, dropped after.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export type TestDialect = 'sqlite' | 'postgres';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** WEBHOOK_SECRET_KEY for test servers (PostgreSQL needs one configured; SQLite would generate its own). */
export const TEST_WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString('base64url');

export function testDialects(): TestDialect[] {
  const dialects: TestDialect[] = ['sqlite'];
  if (process.env.TEST_POSTGRES_URL) dialects.push('postgres');
  else if (process.env.TEST_POSTGRES_REQUIRED === '1')
    throw new Error('TEST_POSTGRES_REQUIRED=1 but TEST_POSTGRES_URL is not set');
  return dialects;
}

/** `postgresUrl` defaults to TEST_POSTGRES_URL; the benchmark passes its own. */
export async function createTestDatabase(
  dialect: TestDialect,
  postgresUrl = process.env.TEST_POSTGRES_URL,
): Promise<TestDatabase> {
  if (dialect === 'sqlite') return createSqlite();
  if (!postgresUrl)
    throw new Error('a PostgreSQL database needs a server URL (TEST_POSTGRES_URL or BENCH_POSTGRES_URL)');
  return createPostgresSchema(postgresUrl);
}

function createSqlite(): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'signet-test-'));
  return { url: `sqlite:${join(dir, 'signet.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

async function createPostgresSchema(base: string): Promise<TestDatabase> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect(); // throws (fails the test) when PostgreSQL is unreachable
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}
