// kill -9 under load with group commit (SQLite, synchronous=FULL): no acknowledged create, pay, ship or
// cancel is lost, and every request that went unanswered, retried with its Idempotency-Key, takes
// effect exactly once. `signet serve` runs as a real child process on a file the test keeps across the crash.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { startChildServer, type ChildServer } from '../helpers/child-server.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { waitUntil } from '../helpers/deadline.ts';

const WORKERS = 12;
/** Load runs until this many creates were acknowledged, then the server is killed mid-stream. */
const ACKED_CREATES_BEFORE_KILL = 150;
const LOAD_DEADLINE_MS = 60_000;
const CALL_MS = 10_000;

type Step = 'create' | 'pay' | 'ship' | 'cancel';

interface Attempt {
  step: Step;
  key: string;
  /** The order the step acts on; for a create, the order it made once known. */
  orderId?: number;
  acknowledged: boolean;
  status?: number;
}

describe('kill -9 under write load [sqlite, group commit]', () => {
  const dir = mkdtempSync(join(tmpdir(), 'signet-crash-'));
  const env = { DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`, SQLITE_SYNCHRONOUS: 'FULL' };
  const servers: ChildServer[] = [];
  after(async () => {
    for (const server of servers) await server.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (server: ChildServer, token: string, attempt: Attempt): Promise<CallResult> => {
    const headers = { 'idempotency-key': attempt.key };
    const signal = AbortSignal.timeout(CALL_MS);
    if (attempt.step === 'create')
      return call(server.url, 'POST', '/api/orders', {
        token,
        headers,
        signal,
        body: { CustomerId: CUSTOMER, Total: 12.5 },
      });
    return call(server.url, 'POST', `/api/orders/${attempt.orderId}/${attempt.step}`, { token, headers, signal });
  };

  test('every acknowledged write survives, and every unanswered one, retried, happens exactly once', async () => {
    const first = await startChildServer({ env });
    servers.push(first);
    const token = await first.issuer.clientToken('orders:read orders:write');
    const attempts: Attempt[] = [];
    let ackedCreates = 0;
    let killed = false;

    const tryStep = async (attempt: Attempt): Promise<boolean> => {
      attempts.push(attempt);
      try {
        const res = await send(first, token, attempt);
        attempt.status = res.status;
        attempt.acknowledged = res.status === 200 || res.status === 201;
        if (!attempt.acknowledged && !killed) assert.fail(`${attempt.step}: ${res.status} ${res.text}`);
        if (attempt.step === 'create' && attempt.acknowledged) attempt.orderId = res.json.Id as number;
      } catch (err) {
        if (!killed) throw err;
      }
      return attempt.acknowledged;
    };
    const worker = async (n: number): Promise<void> => {
      for (let round = 0; !killed; round += 1) {
        const created: Attempt = { step: 'create', key: randomUUID(), acknowledged: false };
        if (!(await tryStep(created))) return;
        ackedCreates += 1;
        const orderId = created.orderId!;
        // Half the orders are paid then shipped, the other half cancelled.
        const path: Step[] = (n + round) % 2 === 0 ? ['pay', 'ship'] : ['cancel'];
        for (const step of path) {
          if (!(await tryStep({ step, key: randomUUID(), orderId, acknowledged: false }))) return;
        }
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, n) => worker(n)));
    await waitUntil(
      () => ackedCreates >= ACKED_CREATES_BEFORE_KILL,
      LOAD_DEADLINE_MS,
      () => `only ${ackedCreates} creates acknowledged; ${first.output()}`,
      5,
    );
    killed = true;
    first.child.kill('SIGKILL');
    assert.equal(await first.waitForExit(10_000), null);
    await load;

    const second = await startChildServer({ env });
    servers.push(second);
    const retryToken = await second.issuer.clientToken('orders:read orders:write');
    const acknowledged = attempts.filter((a) => a.acknowledged);
    const unanswered = attempts.filter((a) => !a.acknowledged);
    const summary = `${acknowledged.length} acknowledged, ${unanswered.length} unanswered (${JSON.stringify(unanswered.map((a) => a.step))})`;
    assert.ok(unanswered.length > 0, `the kill interrupted nothing: ${summary}`);

    // Unanswered requests, retried with the same key, now succeed (replayed when they had committed).
    for (const attempt of unanswered) {
      const res = await send(second, retryToken, attempt);
      assert.ok(
        res.status === 200 || res.status === 201,
        `retried ${attempt.step}: ${res.status} ${res.text}; ${summary}`,
      );
      if (attempt.step === 'create') attempt.orderId = res.json.Id as number;
    }

    const file = new DatabaseSync(join(dir, 'signet.db'), { readOnly: true });
    try {
      const creates = attempts.filter((a) => a.step === 'create');
      const orderIds = creates.map((a) => a.orderId!);
      assert.equal(new Set(orderIds).size, creates.length, `two create keys gave one order: ${summary}`);
      const stored = file.prepare('select count(*) as n from orders').get() as { n: number };
      assert.equal(stored.n, creates.length, `orders stored vs distinct create keys; ${summary}`);
      const changes = file.prepare('select order_id, status from order_status_changes').all() as Array<{
        order_id: number;
        status: string;
      }>;
      for (const attempt of attempts.filter((a) => a.step !== 'create')) {
        const target = { pay: 'paid', ship: 'shipped', cancel: 'cancelled' }[attempt.step as Exclude<Step, 'create'>];
        const rows = changes.filter((c) => c.order_id === attempt.orderId && c.status === target);
        assert.equal(rows.length, 1, `order ${attempt.orderId} has ${rows.length} "${target}" changes; ${summary}`);
      }
      for (const id of orderIds) {
        const rows = changes.filter((c) => c.order_id === id && c.status === 'pending');
        assert.equal(rows.length, 1, `order ${id} has ${rows.length} "pending" changes; ${summary}`);
      }
    } finally {
      file.close();
    }
  });
});
