// bin/signet.js turns Node's on-disk compile cache on before it imports the app, so a start reads the
// app's stripped TypeScript and compiled code from the cache instead of redoing both. Observed through
// Node's own compile-cache debug output (NODE_DEBUG_NATIVE=COMPILE_CACHE), written to stderr.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { COMMAND_TIMEOUT_MS, outcome } from './helpers/deadline.ts';

const BIN = fileURLToPath(new URL('../bin/signet.js', import.meta.url));
const DEFAULT_CACHE = fileURLToPath(new URL('../node_modules/.cache/signet-compile', import.meta.url));
const APP_ENTRY = /for StrippedTypeScript file:\/\/\S*\/src\/cli\/signet\.ts/;

/** `signet --help` with the compile cache's debug output; the environment's own cache settings removed first. */
function help(env: Record<string, string>) {
  return signet(['--help'], env);
}

function signet(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  delete base.NODE_COMPILE_CACHE;
  delete base.NODE_DISABLE_COMPILE_CACHE;
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { ...base, NODE_DEBUG_NATIVE: 'COMPILE_CACHE', ...env },
    encoding: 'utf8',
    timeout: COMMAND_TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024, // a line per module and step: megabytes on a cold start
  });
  assert.equal(result.status, 0, outcome(result));
  return result.stderr;
}

test('by default the cache is node_modules/.cache/signet-compile, and it covers the app’s own modules', () => {
  const debug = help({});
  assert.ok(debug.includes(`resolved path ${DEFAULT_CACHE}`), debug.slice(0, 2000));
  assert.match(debug, APP_ENTRY, 'the app was imported before the cache was on');
});

test('worker threads use the cache too: the SQLite checkpoint thread of `signet migrate`', () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-compile-cache-db-'));
  try {
    const debug = signet(['migrate'], { DATABASE_URL: `sqlite:${join(dir, 'signet.db')}` });
    // Without the cache a worker strips its TypeScript again (28 MB of RSS per thread instead of 18).
    assert.match(
      debug,
      /for StrippedTypeScript file:\/\/\S*\/src\/db\/sqlite\/sqlite-checkpoint\.worker\.ts/,
      debug.slice(-3000),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('NODE_COMPILE_CACHE names another directory; the second start reads the first one’s entries', () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-compile-cache-'));
  try {
    help({ NODE_COMPILE_CACHE: dir });
    assert.ok(readdirSync(dir).length > 0, `nothing was written to ${dir}`);
    const second = help({ NODE_COMPILE_CACHE: dir });
    assert.match(
      second,
      /retrieving transpile cache for StrippedTypeScript file:\/\/\S*\/src\/cli\/signet\.ts\.\.\.success/,
      second.slice(0, 2000),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('NODE_DISABLE_COMPILE_CACHE=1 starts without it', () => {
  const debug = help({ NODE_DISABLE_COMPILE_CACHE: '1' });
  assert.doesNotMatch(debug, APP_ENTRY, debug.slice(0, 2000));
});
