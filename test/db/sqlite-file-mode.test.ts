// The SQLite database holds refresh tokens and, without KEY_ENCRYPTION_KEY, signing keys: a new file,
// and the -wal and -shm files SQLite creates beside it, are readable by their owner only (0600), like
// the webhook key file, whatever the umask.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';

test('a new SQLite database file and its -wal and -shm files are created 0600', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-mode-'));
  const previous = process.umask(0o022); // the usual umask, which leaves new files world-readable
  const path = join(dir, 'data', 'signet.db');
  const handle = openDatabase(`sqlite:${path}`);
  try {
    await sql`create table t (id integer primary key)`.execute(handle.db);
    await sql`insert into t (id) values (1)`.execute(handle.db);
    const modes = Object.fromEntries(
      ['', '-wal', '-shm'].map((suffix) => [
        `signet.db${suffix}`,
        (statSync(`${path}${suffix}`).mode & 0o777).toString(8),
      ]),
    );
    assert.deepEqual(modes, { 'signet.db': '600', 'signet.db-wal': '600', 'signet.db-shm': '600' });
  } finally {
    process.umask(previous);
    await handle.db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
});
