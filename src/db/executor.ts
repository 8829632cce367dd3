// The types every repository takes, apart from how a database is opened (database.ts), so that the drivers
// and direct-read.ts can name them without importing the module that imports them.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
/** Repositories take either the database or an open transaction as their first argument. */
export type Executor = Kysely<Database> | Transaction<Database>;
