// `signet receiver` killed with SIGKILL in the middle of a burst, while its handler is busy with one event,
// then started again on the same inbox: the interrupted event runs again within seconds (the short,
// heartbeat-renewed lease), and before every later event, which had not started (docs/guides/receiving-webhooks.md,
// "Inbox and worker"). Real child processes, real HTTP, every test dialect.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createTestDatabase, testDialects } from '../helpers/databases.ts';
import { exitOf } from '../helpers/deadline.ts';
import { expectStatus } from '../helpers/expect.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import { openInbox } from '../../src/receiver/index.ts';
import { delivery, post } from './kit-helpers.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const BURST = 60;
const SLOW = 10; // the event in progress when the receiver is killed
/** How long a killed or signalled receiver may take to be gone. */
const EXIT_DEADLINE_MS = 20_000;
/** Lease (15 s) plus a second of polling, with room for a loaded machine. */
const TAKEOVER_DEADLINE_MS = 45_000;

/** Appends each event id to `out`; the first time it sees the slow event it marks it and never returns. */
function writeHandler(dir: string, out: string, marker: string): string {
  const path = join(dir, 'handler.mjs');
  writeFileSync(
    path,
    `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
export default async function (event) {
  if (event.data.Slow && !existsSync(${JSON.stringify(marker)})) {
    writeFileSync(${JSON.stringify(marker)}, String(process.pid));
    await new Promise(() => {}); // busy until the process is killed
  }
  appendFileSync(${JSON.stringify(out)}, event.id + '\\n');
}
`,
  );
  return path;
}

function startReceiver(database: string, handler: string, children: ChildProcess[]) {
  const child = spawn(
    process.execPath,
    [BIN, 'receiver', '--port', '0', '--source', 'orders', '--database', database, '--handler', handler],
    {
      env: { ...process.env, SIGNET_RECEIVER_SECRET: 'whsec_receiver-kit-test-secret' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  const url = async (): Promise<string> => {
    const pattern = /listening on (http:\/\/127\.0\.0\.1:\d+\/webhooks\/orders)/;
    await waitUntil(
      () => pattern.test(output) || child.exitCode !== null,
      20_000,
      () => `the receiver to listen: ${output}`,
    );
    const match = pattern.exec(output);
    if (!match) throw new Error(`the receiver exited with ${child.exitCode}: ${output}`);
    return match[1]!;
  };
  return { child, url, output: () => output };
}

function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
}

for (const dialect of testDialects()) {
  describe(`signet receiver after kill -9 on ${dialect}`, () => {
    const children: ChildProcess[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'signet-receiver-crash-'));
    after(() => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });

    test('the event in progress runs again within seconds of a restart, before the later events', async () => {
      const database = await createTestDatabase(dialect);
      try {
        const out = join(dir, 'handled.txt');
        const marker = join(dir, 'slow-started');
        const handler = writeHandler(dir, out, marker);
        const first = startReceiver(database.url, handler, children);
        const url = await first.url();

        const ids: string[] = [];
        for (let n = 1; n <= BURST; n++) {
          const d = delivery({ eventId: `evt_crash_${n}`, data: { N: n, Slow: n === SLOW } });
          const answer = await post(url, d.body, d.headers);
          expectStatus(answer, 200, d.eventId);
          ids.push(d.eventId);
        }
        await waitUntil(
          () => existsSync(marker),
          20_000,
          () => `the slow event started; handled: ${lines(out).length}; output: ${first.output()}`,
        );
        // Every later event was recorded before the kill, and none has started: one at a time, in order.
        assert.deepEqual(lines(out), ids.slice(0, SLOW - 1));
        first.child.kill('SIGKILL');
        await exitOf(first.child, EXIT_DEADLINE_MS, first.output);

        const second = startReceiver(database.url, handler, children);
        await second.url();
        await waitUntil(
          () => lines(out).length === BURST,
          TAKEOVER_DEADLINE_MS,
          () =>
            `every event handled after the restart; handled: ${JSON.stringify(lines(out))}; output: ${second.output()}`,
        );
        assert.deepEqual(lines(out), ids, 'the interrupted event first, then the later ones, in order of arrival');

        const inbox = await openInbox(database.url);
        try {
          const entries = await inbox.list();
          assert.deepEqual(
            entries.map((e) => [e.eventId, e.state, e.attempts]),
            ids.map((id, i) => [id, 'done', i === SLOW - 1 ? 2 : 1]),
          );
        } finally {
          await inbox.close();
        }
        second.child.kill('SIGTERM');
        await exitOf(second.child, EXIT_DEADLINE_MS, second.output);
      } finally {
        await database.drop();
      }
    });
  });
}
