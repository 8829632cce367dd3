// Reads that skip Kysely's executor on the embedded database (issue 17). Kysely hands every query a
// connection through a chain of promises and passes its result through the plugins (none here): ~4 KB
// of garbage and ~8 µs per call, a twentieth of a GET. A compiled SELECT (compiled-statement.ts) run on
// the database itself goes straight to the driver's read, which does what the connection would do
// for a read outside a transaction (sqlite-group-commit.ts). A transaction is another Kysely object,
// never registered here, so a read inside one still goes through it (and sees its writes).
import type { CompiledQuery, QueryResult } from 'kysely';

/** The driver's read, or undefined when the query must take Kysely's path (sqlite-group-commit.ts, readDirect). */
export type DirectRead = <R>(query: CompiledQuery) => Promise<QueryResult<R>> | undefined;

const directReads = new WeakMap<object, DirectRead>();

/** Registers the direct read of a Kysely instance: the database itself, never a transaction of it. */
export function registerDirectRead(db: object, read: DirectRead): void {
  directReads.set(db, read);
}

export function directReadOf(db: object): DirectRead | undefined {
  return directReads.get(db);
}
