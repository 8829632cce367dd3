// A transition requested by PATCH (a patch that sets Status) follows the rule of the action URLs over
// real HTTP: a move to paid only while pending, as one compare-and-set, so of concurrent requests exactly
// one is told it paid; asking for the state the order is already in is 409 with currentStatus, like a
// second POST …/pay. A patch that leaves Status alone is not a transition request.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

type Status = 'pending' | 'paid' | 'shipped' | 'delivered' | 'cancelled';
const PATH_TO: Record<Status, string[]> = {
  pending: [],
  paid: ['pay'],
  shipped: ['pay', 'ship'],
  delivered: ['pay', 'ship', 'deliver'],
  cancelled: ['cancel'],
};

/** The two ways a PATCH sets Status. */
const STATUS_PATCHES: { name: string; contentType: string; body: (status: Status) => unknown }[] = [
  { name: 'merge patch', contentType: MERGE, body: (status) => ({ Status: status }) },
  {
    name: 'JSON Patch',
    contentType: JSON_PATCH,
    body: (status) => [{ op: 'replace', path: '/Status', value: status }],
  },
];

function versionOf(res: CallResult): number {
  const match = /^"\d+\.(\d+)\./.exec(res.headers.get('etag') ?? '');
  assert.ok(match, `ETag ${res.headers.get('etag')}`);
  return Number(match[1]);
}

for (const dialect of testDialects()) {
  describe(`PATCH transitions [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const orderIn = async (status: Status): Promise<number> => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 10 },
      });
      expectStatus(created, 201);
      const id = created.json.Id as number;
      for (const action of PATH_TO[status])
        expectStatus(await call(server.url, 'POST', `/api/orders/${id}/${action}`, { token }), 200);
      return id;
    };
    const patch = (id: number, body: unknown, contentType: string, headers: Record<string, string> = {}) =>
      call(server.url, 'PATCH', `/api/orders/${id}`, { token, body, contentType, headers });
    const get = (id: number, query = '') => call(server.url, 'GET', `/api/orders/${id}${query}`, { token });
    const historyOf = async (id: number): Promise<string[]> =>
      (await get(id, '?include=history')).json._embedded.history.map((h: { Status: string }) => h.Status);

    for (const variant of STATUS_PATCHES) {
      test(`20 concurrent PATCH Status=paid (${variant.name}) on one pending order: exactly one 200, 19 409 naming paid`, async () => {
        const id = await orderIn('pending');
        const responses = await Promise.all(
          Array.from({ length: 20 }, () => patch(id, variant.body('paid'), variant.contentType)),
        );
        const statuses = responses.map((r) => r.status).join(',');
        const ok = responses.filter((r) => r.status === 200);
        const conflicts = responses.filter((r) => r.status === 409);
        assert.equal(ok.length, 1, `statuses: ${statuses}`);
        assert.equal(conflicts.length, 19, `statuses: ${statuses}`);
        for (const r of conflicts) assert.equal(r.json.currentStatus, 'paid', r.text);
        assert.equal(ok[0]!.json.Status, 'paid');
        const now = await get(id);
        assert.equal(now.headers.get('etag'), ok[0]!.headers.get('etag'), 'the winner returned the stored ETag');
        assert.equal(versionOf(now), 2, 'one write');
        assert.deepEqual(await historyOf(id), ['pending', 'paid']);
      });

      test(`PATCH asking for the state the order is in (${variant.name}) is 409 like POST …/pay, and changes nothing`, async () => {
        const id = await orderIn('paid');
        const before = await get(id);
        const pay = await call(server.url, 'POST', `/api/orders/${id}/pay`, { token });
        const res = await patch(id, variant.body('paid'), variant.contentType);
        expectStatus(res, 409);
        assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
        assert.equal(res.json.currentStatus, 'paid', res.text);
        for (const member of ['type', 'title', 'status', 'currentStatus'])
          assert.equal(res.json[member], pay.json[member], `${member} as for POST …/pay: ${pay.text}`);
        const after = await get(id);
        assert.equal(after.headers.get('etag'), before.headers.get('etag'), 'nothing written');

        for (const status of ['pending', 'shipped', 'delivered', 'cancelled'] as const) {
          const other = await orderIn(status);
          const same = await patch(other, variant.body(status), variant.contentType);
          assert.equal(same.status, 409, `${status} → ${status}: ${same.text}`);
          assert.equal(same.json.currentStatus, status);
        }
      });
    }

    test('a pay racing PATCH Status=paid: exactly one of them is told it paid', async () => {
      for (let round = 0; round < 5; round++) {
        const id = await orderIn('pending');
        const [byPatch, byAction] = await Promise.all([
          patch(id, { Status: 'paid' }, MERGE),
          call(server.url, 'POST', `/api/orders/${id}/pay`, { token }),
        ]);
        const winners = [byPatch, byAction].filter((r) => r.status === 200);
        assert.equal(winners.length, 1, `round ${round}: PATCH ${byPatch.text}, pay ${byAction.text}`);
        const loser = winners[0] === byPatch ? byAction : byPatch;
        expectStatus(loser, 409);
        assert.equal(loser.json.currentStatus, 'paid');
        assert.deepEqual(await historyOf(id), ['pending', 'paid'], `round ${round}`);
      }
    });

    test('a PATCH that leaves Status alone still works in any state, and fields with a valid transition apply together', async () => {
      const pending = await orderIn('pending');
      const total = await patch(pending, { Total: 12 }, MERGE);
      expectStatus(total, 200);
      assert.equal(total.json.Status, 'pending');
      const tested = await patch(
        pending,
        [
          { op: 'test', path: '/Status', value: 'pending' },
          { op: 'replace', path: '/Total', value: 13 },
        ],
        JSON_PATCH,
      );
      expectStatus(tested, 200);
      assert.equal(tested.json.Total, 13, 'a test of /Status is not a transition request');

      const paid = await orderIn('paid');
      const paidBefore = await get(paid);
      const noop = await patch(paid, [{ op: 'test', path: '/Status', value: 'paid' }], JSON_PATCH);
      expectStatus(noop, 200);
      assert.equal(noop.headers.get('etag'), paidBefore.headers.get('etag'), 'an empty change writes nothing');
      const unchangedMembers = await patch(paid, { CustomerId: CUSTOMER }, MERGE);
      expectStatus(unchangedMembers, 200);

      const both = await orderIn('pending');
      const res = await patch(both, { Total: 15, Status: 'paid' }, MERGE);
      expectStatus(res, 200);
      assert.equal(res.json.Total, 15);
      assert.equal(res.json.Status, 'paid');
      assert.deepEqual(await historyOf(both), ['pending', 'paid']);
      assert.equal(res.headers.get('etag'), (await get(both)).headers.get('etag'));
    });

    test('a conditional PATCH asking for the current state is 409, not 412 or 200', async () => {
      const id = await orderIn('paid');
      const current = await get(id);
      for (const headers of [{ 'if-match': current.headers.get('etag')! }, { 'if-match': '"stale"' }]) {
        const res = await patch(id, { Status: 'paid' }, MERGE, headers);
        assert.equal(res.status, 409, `${JSON.stringify(headers)}: ${res.text}`);
        assert.equal(res.json.currentStatus, 'paid');
      }
    });
  });
}
