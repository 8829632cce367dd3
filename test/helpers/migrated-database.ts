// A migrated database of one dialect for the enclosing describe(): a copy of the template (database-template.ts) made before its
// tests, closed and dropped after them.
import { after, before } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { createMigratedTestDatabase } from './database-template.ts';
import type { TestDatabase, TestDialect } from './databases.ts';

/** `ready` receives the open handle (and the database, for a second connection) before the tests run. */
export function useMigratedDatabase(
  dialect: TestDialect,
  ready: (handle: DatabaseHandle, database: TestDatabase) => void,
): void {
  let database: TestDatabase | undefined;
  let handle: DatabaseHandle | undefined;
  before(async () => {
    database = await createMigratedTestDatabase(dialect);
    handle = openDatabase(database.url);
    ready(handle, database);
  });
  after(async () => {
    await handle?.db.destroy();
    await database?.drop();
  });
}
