// Work that may only happen once a transaction is durable: handing a committed delivery to the
// in-process dispatcher, for example. Registered from inside the transaction, run after its commit.
import type { DatabaseConnection } from 'kysely';
import type { Executor } from './executor.ts';
import { MemberConnection } from './sqlite/sqlite-group-commit.ts';

/**
 * Runs `callback` (in a microtask) after the transaction `executor` belongs to has committed durably;
 * never if it rolls back. Resolves false when that cannot be promised here (PostgreSQL, whose commit
 * Kysely runs without a hook, or `executor` is not a transaction): the caller then falls back to what
 * it would do without the hook.
 */
export async function afterCommit(executor: Executor, callback: () => void): Promise<boolean> {
  if (!executor.isTransaction) return false;
  const connection = await executor.getExecutor().provideConnection(async (c: DatabaseConnection) => c);
  if (!(connection instanceof MemberConnection) || !connection.inTransaction) return false;
  connection.afterCommit.push(callback);
  return true;
}
