// The receiver kit as a whole: its import boundary (nothing from the producer side), the package
// export a consumer imports, and the standalone receiver end to end on one real HTTP round trip.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { waitUntil } from '../helpers/webhook-receiver.ts';
import { startStandaloneReceiver } from '../../src/receiver/index.ts';
import { delivery, parseJsonText, post, SECRET } from './kit-helpers.ts';
import { expectStatus } from '../helpers/expect.ts';
import { fetchWithin } from '../helpers/http.ts';

const RECEIVER_DIR = new URL('../../src/receiver/', import.meta.url);
// The generic database adapters the kit may share with the producer (docs/architecture.md, "Dependency direction").
const ALLOWED_OUTSIDE = new Set(['../db/sqlite/sqlite-driver.ts', '../db/postgres/current-schema-introspector.ts']);

function importSpecifiers(source: string): string[] {
  const specifiers: string[] = [];
  const patterns = [/\bfrom\s+['"]([^'"]+)['"]/g, /\bimport\s*\(\s*['"]([^'"]+)['"]/g, /\bimport\s+['"]([^'"]+)['"]/g];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) specifiers.push(match[1]!);
  return specifiers;
}

function allowed(specifier: string): boolean {
  if (specifier.startsWith('node:')) return true;
  if (ALLOWED_OUTSIDE.has(specifier)) return true;
  if (specifier.startsWith('./')) return !specifier.slice(2).includes('/') && !specifier.includes('..');
  // A bare package name (scoped or not), never a path.
  return !specifier.startsWith('.') && !specifier.startsWith('/');
}

test('no file in src/receiver imports from the producer side', () => {
  const files = readdirSync(RECEIVER_DIR).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length >= 8, `found ${files.join(', ')}`);
  const offending: string[] = [];
  for (const file of files) {
    const specifiers = importSpecifiers(readFileSync(new URL(file, RECEIVER_DIR), 'utf8'));
    assert.ok(specifiers.length > 0 || file === 'problems.ts', `${file} imports nothing?`);
    for (const s of specifiers) if (!allowed(s)) offending.push(`${file}: ${s}`);
  }
  assert.deepEqual(offending, []);
});

test('the import check itself flags producer imports', () => {
  const sample =
    "import { x } from '../webhooks/signing.ts';\nimport type { Db } from '../db/database.ts';\nconst m = await import('../http/problems.ts');\nimport './sub/dir.ts';";
  assert.deepEqual(
    importSpecifiers(sample)
      .filter((s) => !allowed(s))
      .sort(),
    ['../db/database.ts', '../http/problems.ts', '../webhooks/signing.ts', './sub/dir.ts'],
  );
});

test('the package exports the kit as signet/receiver', async () => {
  const kit = (await import('signet/receiver')) as Record<string, unknown>;
  for (const name of [
    'verifySignature',
    'signBody',
    'acceptDelivery',
    'openInbox',
    'InboxWorker',
    'Reconciler',
    'receiverPlugin',
    'createWebhookHandler',
    'startStandaloneReceiver',
  ]) {
    assert.equal(typeof kit[name], 'function', name);
  }
});

test('the standalone receiver acknowledges a signed delivery and writes the event as one JSON line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-receiver-'));
  const out = new PassThrough();
  let written = '';
  out.on('data', (chunk: Buffer) => (written += chunk.toString('utf8')));
  const receiver = await startStandaloneReceiver({
    port: 0,
    sources: { orders: [SECRET] },
    database: `sqlite:${join(dir, 'inbox.db')}`,
    out,
  });
  try {
    const d = delivery({ data: { OrderId: 42 } });
    const answer = await post(`${receiver.url}/webhooks/orders`, d.body, d.headers);
    expectStatus(answer, 200);
    assert.deepEqual(answer.json, { Received: true });
    await waitUntil(
      () => written.endsWith('\n'),
      10_000,
      () => 'a JSON line',
    );
    const lines = written
      .trim()
      .split('\n')
      .map((l) => parseJsonText(l, 'a line the standalone receiver wrote')!);
    assert.equal(lines.length, 1);
    assert.deepEqual(
      [lines[0]!.id, lines[0]!.deliveryId, lines[0]!.source, lines[0]!.data],
      [d.eventId, d.deliveryId, 'orders', { OrderId: 42 }],
    );
    await waitUntil(
      async () => (await receiver.inbox.list({ state: 'done' })).length === 1,
      10_000,
      () => 'the entry to be done',
    );
  } finally {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the standalone receiver answers stray requests with problem+json: other paths 404, undecodable URLs 404', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-kit-stray-'));
  const receiver = await startStandaloneReceiver({
    port: 0,
    sources: { orders: [SECRET] },
    database: `sqlite:${join(dir, 'inbox.db')}`,
    logLevel: 'silent',
  });
  try {
    for (const [method, path] of [
      ['POST', '/webhooks/orders/'],
      ['GET', '/'],
      ['POST', '/webhooks/%zz'],
      ['POST', '/webhooks'],
    ]) {
      const answer = await fetchWithin(`${receiver.url}${path}`, {
        method,
        body: method === 'POST' ? '{}' : undefined,
      });
      const text = await answer.text();
      assert.equal(answer.status, 404, `${method} ${path}: ${text}`);
      assert.match(answer.headers.get('content-type') ?? '', /^application\/problem\+json/, `${method} ${path}`);
      const problem = parseJsonText(text, `${method} ${path} answered ${answer.status}`);
      assert.ok(String(problem?.type).endsWith('/not-found'), `${method} ${path}: ${text}`);
    }
  } finally {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
