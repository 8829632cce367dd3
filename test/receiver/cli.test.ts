// `signet receiver` and `signet demo` as an operator runs them: real child processes, real HTTP.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { UsageError } from '../../src/cli/admin.ts';
import { deadLetterCommand } from '../../src/cli/receiver-dead.ts';
import { openInbox, signBody } from '../../src/receiver/index.ts';
import { startAuthServer } from '../helpers/auth-server.ts';
import { COMMAND_TIMEOUT_MS, exitOf, outcome } from '../helpers/deadline.ts';
import { call, CUSTOMER, fetchWithin } from '../helpers/http.ts';
import { tokenRequest } from '../helpers/oauth-requests.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import { expectStatus } from '../helpers/expect.ts';
import { parseJsonText } from './kit-helpers.ts';

const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;
const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
/** How long a signalled receiver may take to drain and exit. */
const EXIT_DEADLINE_MS = 20_000;
/** The demo starts a producer and a receiver and runs twelve steps; room for a loaded machine. */
const DEMO_DEADLINE_MS = 150_000;

function run(args: string[], options: { env?: Record<string, string>; input?: string } = {}) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    LOG_LEVEL: 'silent',
    SIGNET_RECEIVER_SECRET: undefined,
    SIGNET_RECEIVER_CLIENT_SECRET: undefined,
    ...options.env,
  };
  return spawnSync(process.execPath, [BIN, ...args], {
    env,
    encoding: 'utf8',
    input: options.input ?? '',
    timeout: COMMAND_TIMEOUT_MS,
  });
}

/** Each line of a command's output (or an --out file) parsed as JSON; a line that is not fails showing it. */
function jsonLines(text: string, what: string): Record<string, unknown>[] {
  return text
    .trim()
    .split('\n')
    .map((line) => parseJsonText(line, what)!);
}

/** Ends a child a failed wait left running, so that it cannot outlive the test. */
function killIfRunning(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Collects a child's stderr: `waitFor` resolves once it matches, `output` is what came so far. */
function stderrWatcher(child: ChildProcess) {
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  const waitFor = async (pattern: RegExp): Promise<RegExpExecArray> => {
    await waitUntil(
      () => pattern.test(output) || child.exitCode !== null,
      20_000,
      () => `${pattern} in: ${output}`,
    );
    const match = pattern.exec(output);
    if (!match) throw new Error(`exited with ${child.exitCode} before ${pattern}: ${output}`);
    return match;
  };
  return { waitFor, output: () => output };
}

function delivery(body: string, signature: string, deliveryId = 'dlv_cli_1'): RequestInit {
  return {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-delivery': deliveryId,
      'x-service-event': 'order.created',
      'x-service-signature-256': signature,
    },
  };
}

describe('signet receiver', () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-receiver-cli-'));
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  test('verifies deliveries, appends each processed event as one JSON line to --out, and stops on SIGTERM', async () => {
    const out = join(dir, 'events.jsonl');
    // The current secret from the environment (not in `ps`), the previous one on the command line.
    const child = spawn(
      process.execPath,
      [
        BIN,
        'receiver',
        '--port',
        '0',
        '--source',
        'orders',
        '--secret',
        OLD_SECRET,
        '--database',
        `sqlite:${join(dir, 'receiver.db')}`,
        '--out',
        out,
      ],
      {
        env: { ...process.env, SIGNET_RECEIVER_SECRET: SECRET },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    const watched = stderrWatcher(child);
    const url = (await watched.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+\/webhooks\/orders)/))[1]!;

    const body = JSON.stringify({
      Id: 'evt_cli_1',
      Type: 'order.created',
      OccurredAtUtc: new Date().toISOString(),
      Timestamp: new Date().toISOString(),
      Data: { Id: 7 },
    });
    const accepted = await fetchWithin(url, delivery(body, signBody(body, SECRET)));
    const acceptedText = await accepted.text();
    assert.equal(accepted.status, 200, acceptedText);
    assert.deepEqual(parseJsonText(acceptedText, `POST ${url} answered ${accepted.status}`), { Received: true });

    const forged = await fetchWithin(url, delivery(body, signBody(body, 'whsec_someone-else'), 'dlv_cli_2'));
    await expectStatus(forged, 401);
    assert.match(forged.headers.get('content-type') ?? '', /application\/problem\+json/);
    const again = await fetchWithin(url, delivery(body, signBody(body, SECRET)));
    await expectStatus(again, 200, 'a repeated delivery id is acknowledged');

    await waitUntil(
      () => existsSync(out) && readFileSync(out, 'utf8').endsWith('\n'),
      20_000,
      () => 'a line in --out',
    );
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1, 'one line: the forged and the repeated delivery are not processed');
    const event = parseJsonText(lines[0]!, 'the line in --out')!;
    assert.equal(event.id, 'evt_cli_1');
    assert.equal(event.type, 'order.created');
    assert.equal(event.deliveryId, 'dlv_cli_1');
    assert.deepEqual(event.data, { Id: 7 });

    // Signed with the previous secret (rotation): accepted too.
    const rotatedBody = body.replace('evt_cli_1', 'evt_cli_3');
    await expectStatus(
      await fetchWithin(url, delivery(rotatedBody, signBody(rotatedBody, OLD_SECRET), 'dlv_cli_3')),
      200,
    );
    await waitUntil(
      () => readFileSync(out, 'utf8').trim().split('\n').length === 2,
      20_000,
      () => 'a second line in --out',
    );

    child.kill('SIGTERM');
    const code = await exitOf(child, EXIT_DEADLINE_MS, watched.output);
    assert.equal(code, 0, watched.output());
  });

  test('a --handler module receives the events, and reads secrets from stdin', async () => {
    const handler = join(dir, 'handler.mjs');
    const seen = join(dir, 'handled.txt');
    writeFileSync(
      handler,
      `import { appendFileSync } from 'node:fs';\nexport default function (event) { appendFileSync(${JSON.stringify(seen)}, event.id + ' ' + event.via + '\\n'); }\n`,
    );
    const child = spawn(
      process.execPath,
      [
        BIN,
        'receiver',
        '--port',
        '0',
        '--source',
        'shop',
        '--secret-stdin',
        '--header-name',
        'Acme',
        '--database',
        `sqlite:${join(dir, 'handler.db')}`,
        '--handler',
        handler,
      ],
      {
        env: { ...process.env, SIGNET_RECEIVER_SECRET: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    child.stdin!.end(`${SECRET}\n`);
    const watched = stderrWatcher(child);
    const url = (await watched.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+\/webhooks\/shop)/))[1]!;
    const body = JSON.stringify({ Id: 'evt_h_1', Timestamp: new Date().toISOString(), Data: {} });
    const response = await fetchWithin(url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'x-acme-delivery': 'dlv_h_1',
        'x-acme-event': 'order.paid',
        'x-acme-signature-256': signBody(body, SECRET),
      },
    });
    assert.equal(response.status, 200, await response.text());
    await waitUntil(
      () => existsSync(seen),
      20_000,
      () => 'the handler ran',
    );
    assert.equal(readFileSync(seen, 'utf8'), 'evt_h_1 webhook\n');
    child.kill('SIGINT');
    assert.equal(await exitOf(child, EXIT_DEADLINE_MS, watched.output), 0, watched.output());
  });

  test('--reconcile-from reads the producer’s missed events of --reconcile-types with a client-credentials token from stdin', async () => {
    const producer = await startAuthServer('sqlite');
    const child = { current: undefined as ChildProcess | undefined, output: () => '' };
    try {
      const writer = await producer.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['orders:write'],
      });
      const issued = await tokenRequest(
        producer,
        { grant_type: 'client_credentials', scope: 'orders:write' },
        { basic: [writer.clientId, writer.clientSecret!] },
      );
      const orderIds: number[] = [];
      for (const total of [3, 4]) {
        const created = await call(producer.url, 'POST', '/api/orders', {
          token: String(issued.body.access_token),
          body: { CustomerId: CUSTOMER, Total: total },
        });
        expectStatus(created, 201);
        orderIds.push(Number(created.json.Id));
      }
      const paid = await call(producer.url, 'POST', `/api/orders/${orderIds[0]}/pay`, {
        token: String(issued.body.access_token),
      });
      expectStatus(paid, 200);
      const reader = await producer.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['events:read'],
      });

      const out = join(dir, 'reconciled.jsonl');
      const args = [
        'receiver',
        '--port',
        '0',
        '--source',
        'orders',
        '--secret',
        SECRET,
        '--database',
        `sqlite:${join(dir, 'reconciled.db')}`,
        '--out',
        out,
      ];
      child.current = spawn(
        process.execPath,
        [
          BIN,
          ...args,
          '--reconcile-from',
          producer.url,
          '--client-id',
          reader.clientId,
          '--client-secret-stdin',
          '--reconcile-types',
          'order.created',
        ],
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      child.current.stdin!.end(`${reader.clientSecret}\n`);
      const watched = stderrWatcher(child.current);
      child.output = watched.output;
      await watched.waitFor(new RegExp(`reconciling from ${producer.url.replace(/[.]/g, '\\.')}`));
      await waitUntil(
        () => existsSync(out) && readFileSync(out, 'utf8').trim().split('\n').length >= 2,
        20_000,
        () => 'two reconciled events in --out',
      );
      // The order.paid event is not one of --reconcile-types: the receiver's inbox never sees it.
      const inbox = await openInbox(`sqlite:${join(dir, 'reconciled.db')}`);
      await waitUntil(
        async () => (await inbox.list({ state: 'pending' })).length === 0,
        20_000,
        () => 'nothing pending',
      );
      assert.deepEqual(
        (await inbox.list()).map((e) => e.eventType),
        ['order.created', 'order.created'],
      );
      await inbox.close();
      const events = jsonLines(readFileSync(out, 'utf8'), 'a line in --out') as {
        type: string;
        via: string;
        data: { Id: number };
      }[];
      assert.deepEqual(
        events.map((e) => [e.type, e.via, e.data.Id]),
        orderIds.map((id) => ['order.created', 'reconciliation', id]),
      );
    } finally {
      if (child.current && child.current.exitCode === null) {
        child.current.kill('SIGTERM');
        await exitOf(child.current, EXIT_DEADLINE_MS, child.output).finally(() => killIfRunning(child.current!));
      }
      await producer.stop();
    }
  });

  test('usage errors exit 2 with a message saying what to change', () => {
    const base = ['receiver', '--port', '0', '--source', 'orders'];
    const cases: [string[], RegExp, Record<string, string>?][] = [
      [['receiver', '--source', 'orders', '--secret', SECRET], /--port <port> is required/],
      [['receiver', '--port', 'http', '--source', 'orders', '--secret', SECRET], /--port must be an integer/],
      [['receiver', '--port', '0', '--secret', SECRET], /--source <name> is required/],
      [['receiver', '--port', '0', '--source', 'a/b', '--secret', SECRET], /--source must be/],
      [base, /at least one secret is required/],
      [[...base, '--secret', SECRET, '--database', 'mysql://x'], /--database must be sqlite:<file> or postgres:/],
      [[...base, '--secret', SECRET, '--handler', join(dir, 'missing.js')], /--handler .* could not be loaded/],
      [[...base, '--secret', SECRET, '--header-name', 'X Y'], /--header-name must be/],
      [[...base, '--secret', SECRET, '--reconcile-from', 'https://producer.example'], /needs --client-id/],
      [
        [...base, '--secret', SECRET, '--reconcile-from', 'ftp://producer.example', '--client-id', 'cl_1'],
        /--reconcile-from must be/,
      ],
      [
        [...base, '--secret', SECRET, '--reconcile-from', 'https://producer.example', '--client-id', 'cl_1'],
        /needs the client secret/,
      ],
      [[...base, '--secret', SECRET, '--client-id', 'cl_1'], /only apply with --reconcile-from/],
      [[...base, '--secret', SECRET, '--reconcile-types', 'order.paid'], /only apply with --reconcile-from/],
      [
        [
          ...base,
          '--secret',
          SECRET,
          '--reconcile-from',
          'https://producer.example',
          '--client-id',
          'cl_1',
          '--reconcile-types',
          'order.paid,,PAID',
        ],
        /--reconcile-types takes event types/,
        { SIGNET_RECEIVER_CLIENT_SECRET: 'x' },
      ],
      [[...base, '--secret-stdin', '--client-secret-stdin'], /cannot both read standard input/],
      [[...base, '--secret', SECRET, '--bogus'], /Unknown option '--bogus'/],
    ];
    for (const [args, message, env] of cases) {
      const result = run(args, { env });
      assert.equal(result.status, 2, `${args.join(' ')}: ${outcome(result)}`);
      assert.match(result.stderr, message, `${args.join(' ')}: ${outcome(result)}`);
    }
    const noDefault = join(dir, 'no-default.mjs');
    writeFileSync(noDefault, 'export const handler = () => {};\n');
    const result = run([...base, '--secret', SECRET, '--handler', noDefault]);
    assert.equal(result.status, 2, outcome(result));
    assert.match(result.stderr, /must export a function as its default export/, outcome(result));
    const help = run(['receiver', '--help']);
    assert.equal(help.status, 0, outcome(help));
    assert.match(help.stdout, /signet receiver --port <port> --source <name>/, outcome(help));
  });
});

describe('signet receiver dead and requeue', () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-receiver-dead-'));
  const database = `sqlite:${join(dir, 'inbox.db')}`;

  /** Records an event per source and lets its handler fail for good, as a worker would after its last retry. */
  async function deadEntries(): Promise<Record<string, number>> {
    const inbox = await openInbox(database);
    const seqs: Record<string, number> = {};
    try {
      for (const source of ['orders', 'billing']) {
        const body = JSON.stringify({
          Id: `evt_dead_${source}`,
          Type: 'order.paid',
          OccurredAtUtc: '2026-11-22T09:00:00Z',
          Timestamp: '2026-11-22T09:00:00Z',
          Data: { Id: 9 },
        });
        await inbox.record({
          source,
          deliveryId: `dlv_dead_${source}`,
          eventId: `evt_dead_${source}`,
          eventType: 'order.paid',
          body,
          via: 'webhook',
          receivedAt: new Date(),
        });
        const claimed = (await inbox.claimNext(new Date(), 60_000))!;
        await inbox.markDead(claimed.seq, `TypeError: cannot read ${source}\n    at handler`);
        seqs[source] = claimed.seq;
      }
    } finally {
      await inbox.close();
    }
    return seqs;
  }

  test('dead lists the failed entries with their last error; requeue hands one back to the running receiver', async () => {
    const seqs = await deadEntries();
    const listed = run(['receiver', 'dead', '--database', database]);
    assert.equal(listed.status, 0, outcome(listed));
    const lines = listed.stdout.trim().split('\n');
    assert.equal(lines.length, 2, outcome(listed));
    assert.match(
      lines[0]!,
      new RegExp(
        `^#${seqs.orders}  orders  order\\.paid  evt_dead_orders  dlv_dead_orders  \\S+  1 attempts  TypeError: cannot read orders at handler$`,
      ),
    );
    assert.match(listed.stderr, /2 dead entries/, outcome(listed));
    const json = run(['receiver', 'dead', '--database', database, '--source', 'billing', '--json']);
    assert.equal(json.status, 0, outcome(json));
    assert.deepEqual(
      jsonLines(json.stdout, 'a line of `receiver dead --json`').map((e) => [e.seq, e.event_id, e.attempts]),
      [[seqs.billing, 'evt_dead_billing', 1]],
    );

    const requeued = run(['receiver', 'requeue', '--database', database, '--seq', String(seqs.orders)]);
    assert.equal(requeued.status, 0, outcome(requeued));
    assert.equal(requeued.stdout.trim(), 'requeued 1 dead entry', outcome(requeued));
    const stillDead = run(['receiver', 'dead', '--database', database, '--json']);
    assert.equal(stillDead.status, 0, outcome(stillDead));
    assert.deepEqual(
      jsonLines(stillDead.stdout, 'a line of `receiver dead --json`').map((e) => e.seq),
      [seqs.billing],
    );

    // The receiver picks the requeued entry up and hands it to its output, once.
    const out = join(dir, 'events.jsonl');
    const child = spawn(
      process.execPath,
      [BIN, 'receiver', '--port', '0', '--source', 'orders', '--secret', SECRET, '--database', database, '--out', out],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const watched = stderrWatcher(child);
    try {
      await watched.waitFor(/listening on/);
      await waitUntil(
        () => existsSync(out) && readFileSync(out, 'utf8').includes('evt_dead_orders'),
        20_000,
        () => 'the requeued event in --out',
      );
    } finally {
      child.kill('SIGTERM');
      await exitOf(child, EXIT_DEADLINE_MS, watched.output).finally(() => killIfRunning(child));
    }
    assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 1, readFileSync(out, 'utf8'));
    const all = run(['receiver', 'requeue', '--database', database, '--all']);
    assert.equal(all.stdout.trim(), 'requeued 1 dead entry', outcome(all));
    const none = run(['receiver', 'requeue', '--database', database, '--all']);
    assert.equal(none.stdout.trim(), 'requeued 0 dead entries', outcome(none));
  });

  test('usage errors say what to change, exit 2, and never create an inbox', async () => {
    const cases: [string[], RegExp][] = [
      [['requeue', '--database', database], /requeue needs --seq <n>, --source <name> or --all/],
      [['requeue', '--database', database, '--all', '--seq', '1'], /--all requeues every dead entry/],
      [['requeue', '--database', database, '--seq', 'x'], /--seq must be an entry number/],
      [['requeue', '--database', database, '--all', '--json'], /--json only applies to dead/],
      [['dead', '--database', database, '--seq', '1'], /only apply to requeue/],
      [['dead', '--database', `sqlite:${join(dir, 'typo.db')}`], /no inbox at .*typo\.db/],
      [['dead', '--database', 'mysql://x'], /--database must be sqlite:<file> or postgres:/],
    ];
    for (const [[action, ...args], message] of cases) {
      await assert.rejects(
        deadLetterCommand(action as 'dead' | 'requeue', args),
        (err: Error) => err instanceof UsageError && message.test(err.message),
        `${action} ${args.join(' ')}`,
      );
    }
    assert.equal(existsSync(join(dir, 'typo.db')), false, 'a mistyped inbox is not created');
    const result = run(['receiver', 'requeue', '--database', database]);
    assert.equal(result.status, 2, outcome(result));
    assert.match(result.stderr, /requeue needs --seq/, outcome(result));
  });
});

describe('signet demo', () => {
  test('runs the whole contract end to end, exits 0 and prints its summary', async () => {
    const child = spawn(process.execPath, [BIN, 'demo'], {
      env: { ...process.env, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const code = await exitOf(child, DEMO_DEADLINE_MS, () => `stdout: ${stdout}\nstderr: ${stderr}`).finally(() =>
      killIfRunning(child),
    );
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /12\/12 {2}Summary/);
    assert.match(stdout, /each of the 6 events processed exactly once/);
    assert.match(stdout, /deliveries: 6 succeeded/);
    assert.match(stdout, /Demo passed in \d+\.\d s\./);
    assert.doesNotMatch(stdout, /✗/);
    const dir = /Temporary files in (\S+) \(/.exec(stdout)?.[1];
    assert.ok(dir && !existsSync(dir), 'the temporary directory is removed');
  });
});
