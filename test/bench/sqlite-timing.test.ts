// bench/lib/sqlite-timing.ts (BENCH_SQLITE_TIMING): every node:sqlite call is counted under its SQL text, a
// window starts from nothing after reset(), and the table gives calls, µs per call and µs per request.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, test } from 'node:test';
import { installSqliteTiming } from '../../bench/lib/sqlite-timing.ts';

const dir = mkdtempSync(join(tmpdir(), 'signet-sqlite-timing-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('counts each statement and exec under its SQL, per window, and writes the table', () => {
  const timing = installSqliteTiming(dir);
  const db = new DatabaseSync(':memory:');
  db.exec('create table t (id integer primary key, v text)');
  const insert = db.prepare('insert into t (v) values (?)');
  insert.run('before the window');
  timing.reset();

  for (let i = 0; i < 3; i++) insert.run(`v${i}`);
  const rows = db.prepare('select v from t order by id').all();
  assert.equal(rows.length, 4);
  db.exec('pragma user_version = 1');
  const file = timing.write('sqlite:post', 2);
  db.close();

  assert.equal(file, join(dir, 'sqlite_post.sqlite.txt'));
  const text = readFileSync(file, 'utf8');
  const lines = text.trim().split('\n');
  assert.match(lines[0] ?? '', /^2 requests; SQLite \d+ ms in all, [\d.]+ µs per request$/, text);
  const row = (sql: string) => lines.find((line) => line.endsWith(`  ${sql}`));
  const calls = (sql: string) => Number(row(sql)?.trim().split(/\s+/)[1]);
  assert.equal(calls('insert into t (v) values (?)'), 3, `the call before reset() is not counted:\n${text}`);
  assert.equal(calls('select v from t order by id'), 1, text);
  assert.equal(calls('exec: pragma user_version = 1'), 1, text);
  assert.equal(row('exec: create table t (id integer primary key, v text)'), undefined, text);
});

test('gives the longest single call, and a second install does not count each call twice', () => {
  const timing = installSqliteTiming(dir);
  assert.equal(installSqliteTiming(dir), timing, 'a second install patched node:sqlite again');
  const db = new DatabaseSync(':memory:');
  db.exec('create table t (id integer primary key, v text)');
  const insert = db.prepare('insert into t (v) values (?)');
  timing.reset();
  for (let i = 0; i < 3; i++) insert.run(`v${i}`);
  const text = readFileSync(timing.write('twice', 3), 'utf8');
  db.close();
  const cells = text
    .split('\n')
    .find((line) => line.endsWith('  insert into t (v) values (?)'))
    ?.trim()
    .split(/\s+/);
  assert.equal(Number(cells?.[1]), 3, text);
  const [perCall, longest] = [Number(cells?.[2]), Number(cells?.[4])];
  assert.ok(
    longest >= Math.floor(perCall),
    `the longest call (${longest} µs) is below the mean (${perCall}):\n${text}`,
  );
});
