// Migrated databases for tests, copied from a template migrated once per run instead of migrating every
// test's database afresh (a migration of all tables takes about 0.2 s on SQLite and 1 s on PostgreSQL;
// a copy a fraction of that). The template is keyed by the content of src/db (the migrations and the code
// they run with), so an edited migration builds a new one.
//
// SQLite: the template is a file under node_modules/.cache/signet-test-templates, checkpointed (no WAL
// beside it) and copied per test. PostgreSQL: a database named `<TEST_POSTGRES_URL's database>_tpl_<key>`
// and per test `CREATE DATABASE <…>_t_<random> TEMPLATE <it>` (https://www.postgresql.org/docs/current/manage-ag-templatedbs.html);
// the role needs CREATEDB. `.ci/pg-database.ts drop` drops both along with the CI database.
import { createHash, randomBytes } from 'node:crypto';
import { constants, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createTestDatabase, type TestDatabase, type TestDialect } from './databases.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CACHE = join(ROOT, 'node_modules', '.cache', 'signet-test-templates');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

let key: string | undefined;
/** A hash of every file under src/db, names and contents. */
function templateKey(): string {
  if (key) return key;
  const hash = createHash('sha256');
  for (const file of filesUnder(join(ROOT, 'src', 'db'))) hash.update(relative(ROOT, file)).update(readFileSync(file));
  key = hash.digest('hex').slice(0, 16);
  return key;
}

let sqliteTemplate: Promise<string> | undefined;

/** The template's path, built on first use in this run; a concurrent build by another test file is harmless (rename). */
function sqliteTemplatePath(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const path = join(CACHE, `sqlite-${templateKey()}.db`);
    if (existsSync(path)) return path;
    const build = join(CACHE, `build-${process.pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(build, { recursive: true });
    try {
      const file = join(build, 'signet.db');
      const handle = openDatabase(`sqlite:${file}`);
      try {
        await migrateToLatest(handle);
      } finally {
        await handle.db.destroy();
      }
      // Everything into the main file, once the app's connections are closed: the file alone is the database.
      const last = new DatabaseSync(file);
      try {
        last.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      } finally {
        last.close();
      }
      renameSync(join(build, 'signet.db'), path);
    } finally {
      rmSync(build, { recursive: true, force: true });
    }
    return path;
  })();
  return sqliteTemplate;
}

/** Copies the migrated SQLite template to `path` (a file in a directory of the test's own). */
export async function copySqliteTemplate(path: string): Promise<void> {
  copyFileSync(await sqliteTemplatePath(), path, constants.COPYFILE_FICLONE);
}

const postgresTemplates = new Map<string, Promise<string>>();

function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`TEST_POSTGRES_URL must name a database of [a-z0-9_]: ${url}`);
  return name;
}

function withDatabase(url: string, name: string): string {
  const copy = new URL(url);
  copy.pathname = `/${name}`;
  return copy.toString();
}

/**
 * The template database's name, built on first use. Builds are serialized across test processes by an
 * advisory lock, and a template only gets its name once migrated, so no copy is ever made of a half-built one.
 */
function postgresTemplate(base: string): Promise<string> {
  let template = postgresTemplates.get(base);
  if (!template) {
    template = (async () => {
      const name = `${databaseName(base)}_tpl_${templateKey()}`;
      const admin = new pg.Client({ connectionString: base });
      await admin.connect();
      try {
        await admin.query('select pg_advisory_lock(hashtext($1))', [name]);
        const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
        if (exists.rowCount === 0) {
          const building = `${databaseName(base)}_tpl_build`;
          await admin.query(`drop database if exists ${building} with (force)`);
          await admin.query(`create database ${building}`);
          const handle = openDatabase(withDatabase(base, building));
          try {
            await migrateToLatest(handle);
          } finally {
            await handle.db.destroy();
          }
          await admin.query(`alter database ${building} rename to ${name}`);
        }
      } finally {
        await admin.end(); // ends the session, and with it the advisory lock
      }
      return name;
    })();
    postgresTemplates.set(base, template);
  }
  return template;
}

async function copyPostgresTemplate(base: string): Promise<TestDatabase> {
  const template = await postgresTemplate(base);
  const name = `${databaseName(base)}_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect(); // throws (fails the test) when PostgreSQL is unreachable
  try {
    await admin.query(`create database ${name} template ${template}`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(base, name),
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A database of `dialect` with every migration applied, of its own (dropped by `drop`). For a test of
 * migrating itself, use createTestDatabase (empty).
 */
export async function createMigratedTestDatabase(
  dialect: TestDialect,
  postgresUrl = process.env.TEST_POSTGRES_URL,
): Promise<TestDatabase> {
  if (dialect === 'postgres') {
    if (!postgresUrl) throw new Error('a PostgreSQL database needs a server URL (TEST_POSTGRES_URL)');
    return copyPostgresTemplate(postgresUrl);
  }
  const database = await createTestDatabase('sqlite');
  try {
    await copySqliteTemplate(database.url.slice('sqlite:'.length));
  } catch (err) {
    await database.drop();
    throw err;
  }
  return database;
}
