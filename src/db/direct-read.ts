// Statements that skip Kysely's executor on the embedded database, whose cost per call exceeded
// SQLite's own (docs/benchmarks-history.md). Kysely hands every query
// a connection through a chain of promises and passes its result through the plugins (none here):
// ~4 KB of garbage and several µs per call.
// - A compiled SELECT (compiled-statement.ts) run on the database itself goes straight to the driver's
//   read, which does what the connection would do for a read outside a transaction.
// - A compiled statement run in a transaction goes straight to the transaction's connection once it is
//   known (asked from Kysely on the transaction's first compiled statement), which runs it in the
//   transaction's savepoint as it would for Kysely, or declines when it must take Kysely's path
//   (sqlite-group-commit.ts, MemberConnection.executeDirect).
import type { CompiledQuery, DatabaseConnection, QueryResult } from 'kysely';
import type { Executor } from './executor.ts';

/** The driver's read, or undefined when the query must take Kysely's path (sqlite-group-commit.ts, readDirect). */
type DirectRead = <R>(query: CompiledQuery) => Promise<QueryResult<R>> | undefined;

/** A connection that runs a statement at once (synchronously), or returns undefined: take Kysely's path. */
export interface DirectConnection extends DatabaseConnection {
  executeDirect<R>(query: CompiledQuery): QueryResult<R> | undefined;
}

const directReads = new WeakMap<object, DirectRead>();
/** The adapters of databases whose transactions' connections are DirectConnections. */
const directAdapters = new WeakSet<object>();
/** Per transaction (its executor, one per transaction): its connection. */
const transactionConnections = new WeakMap<object, DirectConnection>();

/** Registers the direct read of a Kysely instance: the database itself, never a transaction of it. */
export function registerDirectRead(db: object, read: DirectRead): void {
  directReads.set(db, read);
}

export function directReadOf(db: object): DirectRead | undefined {
  return directReads.get(db);
}

/** Declares that every transaction of the database with this adapter runs on a DirectConnection. */
export function registerDirectTransactions(adapter: object): void {
  directAdapters.add(adapter);
}

/**
 * Whether `db` is a transaction of a database that registered direct transactions, without plugins:
 * the direct path does not pass results through a plugin's transformResult (`trx.withPlugin(…)`).
 */
export function isDirectTransaction(db: Executor): boolean {
  if (!db.isTransaction) return false;
  const executor = db.getExecutor();
  return executor.plugins.length === 0 && directAdapters.has(executor.adapter);
}

/**
 * The connection of a transaction for which isDirectTransaction holds. Kysely is asked once per
 * transaction, through its own serialised hand-out, so a statement it is still running finishes first.
 */
export async function directConnectionOf(trx: Executor): Promise<DirectConnection> {
  const executor = trx.getExecutor();
  let connection = transactionConnections.get(executor);
  if (!connection) {
    connection = await executor.provideConnection(async (c) => c as DirectConnection);
    transactionConnections.set(executor, connection);
  }
  return connection;
}
