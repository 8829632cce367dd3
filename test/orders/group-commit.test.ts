// Group commit through the API (SQLite): concurrent writes share COMMITs, and a request that fails
// (409, 412, 422, an idempotency conflict) undoes only its own work while the others in its group keep theirs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { withDeadline } from '../helpers/deadline.ts';

describe('group commit of concurrent order writes [sqlite]', () => {
  let server: TestServer;
  let token: string;

  before(async () => {
    // A wide window, so that requests sent together meet in a group even on a loaded test machine.
    ({ server, token } = await startWithClientToken('sqlite', { SQLITE_GROUP_COMMIT_WINDOW: '25ms' }));
  });
  after(async () => server.close());

  const create = (key: string, total = 10): Promise<CallResult> =>
    call(server.url, 'POST', '/api/orders', {
      token,
      body: { CustomerId: CUSTOMER, Total: total },
      headers: { 'idempotency-key': key },
    });
  const pay = (id: number): Promise<CallResult> => call(server.url, 'POST', `/api/orders/${id}/pay`, { token });
  const db = () => server.app.database.db;

  test('40 creates, pays and failing writes at once: few COMMITs, every success kept, every failure leaves nothing', async () => {
    const reused = `reused-${randomUUID()}`;
    assert.equal((await create(reused)).status, 201);
    const pending = await Promise.all([1, 2, 3].map(async () => (await create(randomUUID())).json.Id as number));
    const alreadyPaid = pending[0]!;
    assert.equal((await pay(alreadyPaid)).status, 200);
    const stats = server.app.database.groupCommit!;
    const before = { ...stats };
    const ordersBefore = Number(
      (
        await db()
          .selectFrom('orders')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirst()
      )?.n,
    );

    const keys = Array.from({ length: 40 }, () => randomUUID());
    const burst = await withDeadline(
      Promise.all([
        ...keys.map((key) => create(key)),
        create(reused, 99), // same key, other body: 409
        create(randomUUID(), -5), // 422
        pay(alreadyPaid), // 409, already paid
        pay(pending[1]!), // 200
        call(server.url, 'PATCH', `/api/orders/${pending[2]}`, {
          token,
          body: { Total: 11 },
          contentType: 'application/merge-patch+json',
          headers: { 'if-match': '"not-the-etag"' },
        }), // 412
      ]),
      60_000,
      'the burst of writes',
    );
    const statuses = burst.map((r) => r.status);
    const explain = () => JSON.stringify({ statuses, bodies: burst.filter((r) => r.status >= 300).map((r) => r.text) });
    assert.deepEqual(statuses.slice(0, 40), Array(40).fill(201), explain());
    assert.deepEqual(statuses.slice(40), [409, 422, 409, 200, 412], explain());

    const after = { ...stats };
    const members = after.members - before.members;
    const commits = after.commits - before.commits;
    assert.ok(members >= 41, `only ${members} members committed: ${JSON.stringify({ before, after })}`);
    assert.ok(commits < members / 2, `${members} members took ${commits} COMMITs`);

    // Every acknowledged create has its order, its history row and its order.created event; nothing else was created.
    const created = burst.slice(0, 40).map((r) => r.json.Id as number);
    const ordersAfter = Number(
      (
        await db()
          .selectFrom('orders')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirst()
      )?.n,
    );
    assert.equal(ordersAfter - ordersBefore, 40);
    const events = await db()
      .selectFrom('webhook_events')
      .select(['order_id', 'type'])
      .where('order_id', 'in', [...created, ...pending])
      .execute();
    for (const id of created)
      assert.deepEqual(
        events.filter((e) => e.order_id === id).map((e) => e.type),
        ['order.created'],
        `events of order ${id}`,
      );
    // The failed pay and the failed PATCH changed nothing: one paid event for each paid order, none for the 412.
    const paidEvents = (id: number) => events.filter((e) => e.order_id === id && e.type === 'order.paid').length;
    assert.equal(paidEvents(alreadyPaid), 1);
    assert.equal(paidEvents(pending[1]!), 1);
    const patched = await call(server.url, 'GET', `/api/orders/${pending[2]}`, { token });
    assert.equal(patched.json.Total, 10, patched.text);
    assert.equal(events.filter((e) => e.order_id === pending[2] && e.type === 'order.updated').length, 0);
    // The refused key still answers with its first request's order.
    const replay = await create(reused);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  });
});
