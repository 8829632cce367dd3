// Kysely's migrator over an in-code list: migrations ship inside the package (no directory scanning),
// and their names sort in the order they were written.
import { sql } from 'kysely';
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import { withoutTimeouts, type DatabaseHandle } from './database.ts';
import { ordersMigration } from './migrations/0001-orders.ts';
import { authServerMigration } from './migrations/0002-auth-server.ts';
import { webhooksMigration } from './migrations/0003-webhooks.ts';
import { hashedTokenIdsMigration } from './migrations/0004-hashed-token-ids.ts';
import { postLogoutRedirectUrisMigration } from './migrations/0005-post-logout-redirect-uris.ts';
import { resourceServerClientsMigration } from './migrations/0006-resource-server-clients.ts';
import { operationsMigration } from './migrations/0007-operations.ts';
import { consoleSessionsMigration } from './migrations/0008-console-sessions.ts';
import { clientOwnersPortalLinksMigration } from './migrations/0009-client-owners-portal-links.ts';
import { tokenStatsMigration } from './migrations/0010-token-stats.ts';
import { adminDeliveryIndexesMigration } from './migrations/0011-admin-delivery-indexes.ts';
import { portalSessionsMigration } from './migrations/0012-portal-sessions.ts';
import { eventFeedCustomerIndexMigration } from './migrations/0013-event-feed-customer-index.ts';
import { portalCustomersMigration } from './migrations/0014-portal-customers.ts';
import { consoleSessionIdleMigration } from './migrations/0015-console-session-idle.ts';
import { registrationTokensMigration } from './migrations/0016-registration-tokens.ts';
import { auditChainMigration } from './migrations/0017-audit-chain.ts';
import { auditStreamMigration } from './migrations/0018-audit-stream.ts';
import { signingKeyActivationMigration } from './migrations/0019-signing-key-activation.ts';
import { clusterSettingsMigration } from './migrations/0020-cluster-settings.ts';

function migrationsFor(handle: DatabaseHandle): Record<string, Migration> {
  return {
    '0001-orders': ordersMigration(handle.dialect),
    '0002-auth-server': authServerMigration(handle.dialect),
    '0003-webhooks': webhooksMigration(handle.dialect),
    '0004-hashed-token-ids': hashedTokenIdsMigration(),
    '0005-post-logout-redirect-uris': postLogoutRedirectUrisMigration(),
    '0006-resource-server-clients': resourceServerClientsMigration(),
    '0007-operations': operationsMigration(handle.dialect),
    '0008-console-sessions': consoleSessionsMigration(handle.dialect),
    '0009-client-owners-portal-links': clientOwnersPortalLinksMigration(handle.dialect),
    '0010-token-stats': tokenStatsMigration(handle.dialect),
    '0011-admin-delivery-indexes': adminDeliveryIndexesMigration(),
    '0012-portal-sessions': portalSessionsMigration(handle.dialect),
    '0013-event-feed-customer-index': eventFeedCustomerIndexMigration(handle.dialect),
    '0014-portal-customers': portalCustomersMigration(handle.dialect),
    '0015-console-session-idle': consoleSessionIdleMigration(handle.dialect),
    '0016-registration-tokens': registrationTokensMigration(handle.dialect),
    '0017-audit-chain': auditChainMigration(),
    '0018-audit-stream': auditStreamMigration(),
    '0019-signing-key-activation': signingKeyActivationMigration(handle.dialect),
    '0020-cluster-settings': clusterSettingsMigration(handle.dialect),
  };
}

/**
 * On PostgreSQL the bookkeeping tables are pinned to the connection's current schema: left alone,
 * Kysely looks for them in every schema and skips creating its own when another schema has them.
 */
async function migratorFor(handle: DatabaseHandle): Promise<Migrator> {
  const schema =
    handle.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(handle.db)).rows[0]?.schema
      : undefined;
  return new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => migrationsFor(handle) },
    migrationTableSchema: schema,
  });
}

/** Without the request timeouts: an index build, or waiting for another instance's migration lock, may take longer. */
export async function migrateToLatest(handle: DatabaseHandle): Promise<MigrationResultSet> {
  // SQLite: an index build sorts through temporary files, which must not be held in memory (DatabaseHandle).
  await handle.setTempStore?.('FILE');
  let result: MigrationResultSet;
  try {
    result = await withoutTimeouts(handle, async (db) => (await migratorFor({ ...handle, db })).migrateToLatest());
  } finally {
    await handle.setTempStore?.('MEMORY');
  }
  if (result.error) throw result.error;
  return result;
}

/**
 * True when every known migration has been applied (the /readyz check). Reads Kysely's bookkeeping
 * table directly: the Migrator would first introspect every table, which waits for any lock held on
 * one of them (a maintenance job's LOCK TABLE orders) and would make a reachable database look down.
 */
export async function migrationsAreCurrent(handle: DatabaseHandle): Promise<boolean> {
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(handle.db);
    const applied = new Set(rows.map((row) => row.name));
    return Object.keys(migrationsFor(handle)).every((name) => applied.has(name));
  } catch (err) {
    if (isMissingTable(err)) return false; // a database never migrated
    throw err;
  }
}

/** PostgreSQL undefined_table (42P01); SQLite "no such table". */
function isMissingTable(err: unknown): boolean {
  const { code, message } = err as { code?: unknown; message?: unknown };
  return (
    code === '42P01' ||
    (code === 'ERR_SQLITE_ERROR' && typeof message === 'string' && message.startsWith('no such table'))
  );
}
