// Kysely's SqliteDialect over node:sqlite, with group commit (sqlite-group-commit.ts): a writer
// connection whose transactions share COMMITs, and a read-only connection for reads.
import { SqliteAdapter, SqliteDialect, type DialectAdapter, type Driver } from 'kysely';
import { GroupCommitDriver, type GroupCommitTiming, type StartCheckpoints } from './sqlite-group-commit.ts';
import type { NodeSqliteDatabase } from './sqlite-driver.ts';

/**
 * The driver serializes the writer itself and lets reads run beside it, so Kysely must not put every
 * query behind its single-connection mutex.
 */
class GroupCommitAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

export class NodeSqliteDialect extends SqliteDialect {
  readonly driver: GroupCommitDriver;

  constructor(
    writer: NodeSqliteDatabase,
    reader: NodeSqliteDatabase | undefined,
    timing: GroupCommitTiming,
    startCheckpoints?: StartCheckpoints,
  ) {
    super({ database: writer });
    this.driver = new GroupCommitDriver(writer, reader, timing, startCheckpoints);
  }

  override createDriver(): Driver {
    return this.driver;
  }

  override createAdapter(): DialectAdapter {
    return new GroupCommitAdapter();
  }
}
