// WAL checkpoints run on a thread of their own (src/db/sqlite/sqlite-checkpointer.ts), not inside the writer's
// COMMIT, where they held the event loop for up to 162 ms (the event purge's writer stall). What a file
// on disk shows: a WAL past SQLite's default 1000 pages stays in the WAL until the thread copies it into
// the database file; a lost thread is started again; closing leaves no WAL behind and loses nothing, even
// when the thread never answers the stop.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { CheckpointThread } from '../../src/db/sqlite/sqlite-checkpointer.ts';
import { waitUntil } from '../helpers/deadline.ts';

const PAGE = 4096;
/** Rows of about a page each: 2,000 of them are twice SQLite's default wal_autocheckpoint (1000 pages). */
const ROWS = 2000;
const WAIT_MS = 15_000;

function tempDatabase(t: TestContext, checkpoints: CheckpointThread): { path: string; handle: DatabaseHandle } {
  const dir = mkdtempSync(join(tmpdir(), 'signet-ckpt-'));
  const path = join(dir, 'signet.db');
  const handle = openDatabase(`sqlite:${path}`, { sqliteCheckpoints: checkpoints });
  t.after(async () => {
    await handle.db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  return { path, handle };
}

/** ROWS rows of about a page each, in one transaction (one COMMIT, about ROWS pages in the WAL). */
async function writePages(handle: DatabaseHandle): Promise<void> {
  await sql`create table if not exists filler (id integer primary key, body blob not null)`.execute(handle.db);
  await handle.db.transaction().execute(async (trx) => {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ROWS})
      insert into filler (body) select randomblob(${PAGE - 200}) from n`.execute(trx);
  });
}

const fileSize = (path: string) => statSync(path).size;

async function waitFor(what: string, check: () => boolean, state: () => string): Promise<void> {
  await waitUntil(check, WAIT_MS, () => `${what} did not happen; ${state()}`);
}

const sizes = (path: string) =>
  `database file ${fileSize(path)} bytes, WAL ${existsSync(`${path}-wal`) ? fileSize(`${path}-wal`) : 'absent'}`;

test('a COMMIT past 1000 WAL pages leaves the checkpoint to the thread', async (t) => {
  // A thread whose first checkpoint is a minute away: whatever reaches the database file meanwhile
  // was copied by the writer's own COMMIT.
  const { path, handle } = tempDatabase(t, new CheckpointThread({ intervalMs: 60_000 }));
  await writePages(handle);
  await writePages(handle); // a second COMMIT, with the WAL already past 1000 pages
  assert.ok(fileSize(path) < (ROWS * PAGE) / 4, `the writer checkpointed: ${sizes(path)}`);
  assert.ok(fileSize(`${path}-wal`) > 2 * ROWS * PAGE, `the WAL does not hold both commits: ${sizes(path)}`);
});

test('the checkpoint thread copies the WAL into the database file', async (t) => {
  const { path, handle } = tempDatabase(t, new CheckpointThread({ intervalMs: 50 }));
  await writePages(handle);
  await waitFor(
    'the checkpoint',
    () => fileSize(path) > ROWS * PAGE,
    () => sizes(path),
  );
});

test('a lost checkpoint thread is started again with the files it had', async (t) => {
  const checkpoints = new CheckpointThread({ intervalMs: 50, restartDelayMs: 50 });
  const { path, handle } = tempDatabase(t, checkpoints);
  await writePages(handle);
  await waitFor(
    'the first checkpoint',
    () => fileSize(path) > ROWS * PAGE,
    () => sizes(path),
  );
  const lost = checkpoints.thread;
  assert.ok(lost, 'no checkpoint thread runs while a file is open');
  await lost.terminate();
  await waitFor(
    'a new thread',
    () => checkpoints.thread !== undefined && checkpoints.thread !== lost,
    () => 'none',
  );
  await writePages(handle);
  await waitFor(
    'the checkpoint after the restart',
    () => fileSize(path) > 2 * ROWS * PAGE,
    () => sizes(path),
  );
});

test('closing stops the thread first, so the writer removes the WAL and nothing is lost', async (t) => {
  const checkpoints = new CheckpointThread({ intervalMs: 60_000 });
  const dir = mkdtempSync(join(tmpdir(), 'signet-ckpt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'signet.db');
  const handle = openDatabase(`sqlite:${path}`, { sqliteCheckpoints: checkpoints });
  await writePages(handle);
  await handle.db.destroy();
  assert.equal(existsSync(`${path}-wal`), false, `the WAL outlived the close: ${sizes(path)}`);
  assert.equal(checkpoints.thread, undefined, 'the thread outlived its last file');
  const reopened = openDatabase(`sqlite:${path}`, { sqliteCheckpoints: checkpoints });
  try {
    const { rows } = await sql<{ n: number }>`select count(*) as n from filler`.execute(reopened.db);
    assert.equal(rows[0]?.n, ROWS);
  } finally {
    await reopened.db.destroy();
  }
});

test('a thread that never answers a stop is waited for only so long, then ended; the writer still closes', async (t) => {
  const checkpoints = new CheckpointThread({
    stopWaitMs: 200,
    workerUrl: new URL('./fixtures/unanswering-checkpoint.worker.ts', import.meta.url),
  });
  const dir = mkdtempSync(join(tmpdir(), 'signet-ckpt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'signet.db');
  const handle = openDatabase(`sqlite:${path}`, { sqliteCheckpoints: checkpoints });
  await sql`create table t (id integer primary key)`.execute(handle.db);
  await sql`insert into t (id) values (1)`.execute(handle.db);
  const thread = checkpoints.thread;
  assert.ok(thread, 'the first query started no thread');
  const exited = new Promise<number>((resolve) => thread.once('exit', resolve));
  await within(handle.db.destroy(), 'closing the database, its thread never answering');
  assert.equal(checkpoints.thread, undefined, 'the unanswering thread is still the current one');
  await within(exited, 'the unanswering thread to be ended');
  assert.equal(existsSync(`${path}-wal`), false, `the writer did not close as the last connection: ${sizes(path)}`);
  const reopened = openDatabase(`sqlite:${path}`, { sqliteCheckpoints: new CheckpointThread() });
  try {
    const { rows } = await sql<{ n: number }>`select count(*) as n from t`.execute(reopened.db);
    assert.equal(rows[0]?.n, 1);
  } finally {
    await reopened.db.destroy();
  }
});

/** `promise`, or a failure naming `what` after WAIT_MS: a stop that waits for ever must fail, not hang. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${WAIT_MS} ms`)), WAIT_MS);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

test('a database never queried starts no thread: Kysely destroys only a driver it used', async (t) => {
  const checkpoints = new CheckpointThread();
  const dir = mkdtempSync(join(tmpdir(), 'signet-ckpt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const handle = openDatabase(`sqlite:${join(dir, 'signet.db')}`, { sqliteCheckpoints: checkpoints });
  assert.equal(checkpoints.thread, undefined, 'a thread started for a handle that may never be destroyed');
  await handle.db.destroy();
  assert.equal(checkpoints.thread, undefined);
});

test('a process that exits without closing its database is not held up by the thread', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-ckpt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const database = fileURLToPath(new URL('../../src/db/database.ts', import.meta.url));
  const script = `
    const { openDatabase } = await import(${JSON.stringify(database)});
    const { sql } = await import('kysely');
    const handle = openDatabase(${JSON.stringify(`sqlite:${join(dir, 'signet.db')}`)});
    await sql\`create table t (id integer primary key)\`.execute(handle.db);
    console.log('queried');`;
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      const child = execFile(
        process.execPath,
        ['--input-type=module', '-e', script],
        { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 30_000, killSignal: 'SIGKILL' },
        (err, stdout, stderr) => resolve({ code: err ? (child.exitCode ?? -1) : 0, stdout, stderr }),
      );
    },
  );
  assert.equal(stdout.trim(), 'queried', stderr);
  assert.equal(code, 0, `the process did not exit on its own within 30 s: ${stderr}`);
});
