// The order state machine over real HTTP: the allowed path, every refused transition, the links each
// state advertises, the status history, and the compare-and-set under concurrent requests.
//
//   pending ──pay──▶ paid ──ship──▶ shipped ──deliver──▶ delivered
//      └──cancel──▶ cancelled
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

type Status = 'pending' | 'paid' | 'shipped' | 'delivered' | 'cancelled';
const ACTIONS = ['pay', 'cancel', 'ship', 'deliver'] as const;
const ALLOWED: Record<Status, string[]> = {
  pending: ['pay', 'cancel'],
  paid: ['ship'],
  shipped: ['deliver'],
  delivered: [],
  cancelled: [],
};
const PATH_TO: Record<Status, string[]> = {
  pending: [],
  paid: ['pay'],
  shipped: ['pay', 'ship'],
  delivered: ['pay', 'ship', 'deliver'],
  cancelled: ['cancel'],
};
const MERGE = 'application/merge-patch+json';

/** The links orders.representation.ts builds for an order in `status`, as absolute URLs. */
function expectedLinks(self: string, status: Status): Record<string, { href: string; method: string }> {
  const links: Record<string, { href: string; method: string }> = { self: { href: self, method: 'GET' } };
  for (const action of ALLOWED[status]) links[action] = { href: `${self}/${action}`, method: 'POST' };
  if (status === 'pending') links.update = { href: self, method: 'PUT' };
  if (status === 'pending' || status === 'cancelled') links.delete = { href: self, method: 'DELETE' };
  if (status === 'shipped' || status === 'delivered') links.track = { href: `${self}?include=history`, method: 'GET' };
  return links;
}

function versionOf(res: CallResult): number {
  const match = /^"\d+\.(\d+)\./.exec(res.headers.get('etag') ?? '');
  assert.ok(match, `ETag ${res.headers.get('etag')}`);
  return Number(match[1]);
}

for (const dialect of testDialects()) {
  describe(`order transitions [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const create = async (): Promise<number> => {
      const res = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 10 } });
      expectStatus(res, 201);
      return res.json.Id;
    };
    const act = (id: number, action: string, headers: Record<string, string> = {}) =>
      call(server.url, 'POST', `/api/orders/${id}/${action}`, { token, headers });
    const get = (id: number, query = '') => call(server.url, 'GET', `/api/orders/${id}${query}`, { token });
    const orderIn = async (status: Status): Promise<number> => {
      const id = await create();
      for (const action of PATH_TO[status])
        assert.equal((await act(id, action)).status, 200, `${action} on the way to ${status}`);
      return id;
    };
    const historyOf = async (id: number): Promise<string[]> =>
      (await get(id, '?include=history')).json._embedded.history.map((h: { Status: string }) => h.Status);

    test('an order moves pending → paid → shipped → delivered by following its own links', async () => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 10 },
      });
      let order = created.json;
      assert.equal(order.Status, 'pending');
      for (const [action, status] of [
        ['pay', 'paid'],
        ['ship', 'shipped'],
        ['deliver', 'delivered'],
      ] as const) {
        const link = order._links[action];
        assert.ok(link, `${order.Status} offers ${action}`);
        assert.equal(link.method, 'POST');
        const res = await call(server.url, link.method, link.href.slice(server.url.length), { token });
        assert.equal(res.status, 200, `${action}: ${res.text}`);
        assert.equal(res.json.Status, status);
        assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
        assert.deepEqual(
          (await get(order.Id)).json,
          res.json,
          'the action returns the representation a GET now returns',
        );
        order = res.json;
      }
      assert.deepEqual(Object.keys(order._links).sort(), ['self', 'track']);
    });

    test('cancel is allowed from pending only', async () => {
      const id = await create();
      const res = await act(id, 'cancel');
      expectStatus(res, 200);
      assert.equal(res.json.Status, 'cancelled');
      for (const status of ['paid', 'shipped', 'delivered', 'cancelled'] as const) {
        const other = await orderIn(status);
        const refused = await act(other, 'cancel');
        assert.equal(refused.status, 409, status);
        assert.equal(refused.json.currentStatus, status);
      }
    });

    test('every illegal transition is a 409 problem naming the current state, and changes nothing', async () => {
      for (const status of ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const) {
        const id = await orderIn(status);
        const before = await get(id);
        for (const action of ACTIONS.filter((a) => !ALLOWED[status].includes(a))) {
          const res = await act(id, action);
          assert.equal(res.status, 409, `${action} from ${status}`);
          assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
          assert.match(res.json.type, /\/problems\/invalid-state$/);
          assert.equal(res.json.status, 409);
          assert.equal(res.json.currentStatus, status, `${action} from ${status}`);
          assert.match(res.json.detail, new RegExp(`is ${status}`));
        }
        const afterwards = await get(id);
        assert.equal(afterwards.headers.get('etag'), before.headers.get('etag'), `${status} order unchanged`);
      }
    });

    test('PATCH can make exactly the allowed moves; any other Status change is a 409 naming the current state', async () => {
      const illegal: [Status, Status][] = [
        ['pending', 'shipped'],
        ['pending', 'delivered'],
        ['paid', 'pending'],
        ['paid', 'cancelled'],
        ['paid', 'delivered'],
        ['shipped', 'paid'],
        ['delivered', 'shipped'],
        ['cancelled', 'pending'],
        ['cancelled', 'paid'],
      ];
      for (const [from, to] of illegal) {
        const id = await orderIn(from);
        const res = await call(server.url, 'PATCH', `/api/orders/${id}`, {
          token,
          body: { Status: to },
          contentType: MERGE,
        });
        assert.equal(res.status, 409, `${from} → ${to}`);
        assert.equal(res.json.currentStatus, from, `${from} → ${to}`);
        assert.equal((await get(id)).json.Status, from);
      }
      const legal: [Status, Status][] = [
        ['pending', 'paid'],
        ['pending', 'cancelled'],
        ['paid', 'shipped'],
        ['shipped', 'delivered'],
      ];
      for (const [from, to] of legal) {
        const id = await orderIn(from);
        const res = await call(server.url, 'PATCH', `/api/orders/${id}`, {
          token,
          body: { Status: to },
          contentType: MERGE,
        });
        assert.equal(res.status, 200, `${from} → ${to}`);
        assert.equal(res.json.Status, to);
        assert.deepEqual((await historyOf(id)).slice(-2), [from, to], 'a PATCH transition is recorded in the history');
      }
    });

    test('each state advertises exactly its links, all absolute, on GET and on the action response', async () => {
      for (const status of ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const) {
        const id = await orderIn(status);
        const self = `${server.url}/api/orders/${id}`;
        const res = await get(id);
        assert.equal(res.json.Status, status);
        assert.deepEqual(res.json._links, expectedLinks(self, status), status);
        for (const [rel, link] of Object.entries(res.json._links as Record<string, { href: string }>)) {
          assert.equal(new URL(link.href).origin, server.url, `${status} ${rel} is absolute`);
        }
        const listed = await call(server.url, 'GET', `/api/orders?limit=1&CustomerId=${CUSTOMER}`, { token });
        assert.deepEqual(listed.json.Items[0]._links, expectedLinks(self, status), `${status} in the list`);
      }
      const paid = await act(await create(), 'pay');
      assert.deepEqual(paid.json._links, expectedLinks(`${server.url}/api/orders/${paid.json.Id}`, 'paid'));
    });

    test('the track link of a shipped order returns its history', async () => {
      const id = await orderIn('shipped');
      const track = (await get(id)).json._links.track;
      const res = await call(server.url, track.method, track.href.slice(server.url.length), { token });
      expectStatus(res, 200);
      assert.deepEqual(
        res.json._embedded.history.map((h: { Status: string }) => h.Status),
        ['pending', 'paid', 'shipped'],
      );
    });

    test('include=history lists every status change in order with non-decreasing times', async () => {
      const id = await create();
      assert.deepEqual(await historyOf(id), ['pending']);
      for (const action of ['pay', 'ship', 'deliver']) await act(id, action);
      const res = await get(id, '?include=history');
      const history = res.json._embedded.history as { Status: string; AtUtc: string }[];
      assert.deepEqual(
        history.map((h) => h.Status),
        ['pending', 'paid', 'shipped', 'delivered'],
      );
      const times = history.map((h) => Date.parse(h.AtUtc));
      assert.ok(
        times.every((t, i) => Number.isFinite(t) && (i === 0 || t >= times[i - 1]!)),
        JSON.stringify(history),
      );
      assert.equal(history.at(-1)!.AtUtc, res.json.UpdatedAtUtc, 'the last change is the last update');
      assert.equal(history[0]!.AtUtc, res.json.CreatedAtUtc);

      const cancelled = await orderIn('cancelled');
      assert.deepEqual(await historyOf(cancelled), ['pending', 'cancelled']);
      const edited = await create();
      await call(server.url, 'PATCH', `/api/orders/${edited}`, { token, body: { Total: 11 }, contentType: MERGE });
      assert.deepEqual(await historyOf(edited), ['pending'], 'a field change is not a status change');
      const failed = await orderIn('paid');
      await act(failed, 'deliver');
      assert.deepEqual(await historyOf(failed), ['pending', 'paid'], 'a refused transition leaves no trace');
    });

    test('PUT changing Total of a paid order is 409 naming the state; an unchanged PUT is still 200', async () => {
      for (const status of ['paid', 'shipped', 'delivered', 'cancelled'] as const) {
        const id = await orderIn(status);
        const current = await get(id);
        const res = await call(server.url, 'PUT', `/api/orders/${id}`, { token, body: { ...current.json, Total: 11 } });
        assert.equal(res.status, 409, status);
        assert.equal(res.json.currentStatus, status);
        const currency = await call(server.url, 'PUT', `/api/orders/${id}`, {
          token,
          body: { ...current.json, Currency: 'EUR' },
        });
        assert.equal(currency.status, 409, `${status}: Currency`);
        const unchanged = await call(server.url, 'PUT', `/api/orders/${id}`, { token, body: current.json });
        assert.equal(unchanged.status, 200, `${status}: repeating the current representation is idempotent`);
        assert.equal(unchanged.headers.get('etag'), current.headers.get('etag'));
        const patch = await call(server.url, 'PATCH', `/api/orders/${id}`, {
          token,
          body: { Total: 11 },
          contentType: MERGE,
        });
        assert.equal(patch.status, 409, `${status}: PATCH Total`);
        assert.equal(patch.json.currentStatus, status);
        assert.equal((await get(id)).json.Total, 10);
      }
    });

    test('100 concurrent pays of one pending order: exactly one 200, 99 409s naming paid', async () => {
      const id = await create();
      const responses = await Promise.all(Array.from({ length: 100 }, () => act(id, 'pay')));
      const ok = responses.filter((r) => r.status === 200);
      const conflicts = responses.filter((r) => r.status === 409);
      assert.equal(ok.length, 1, `statuses: ${responses.map((r) => r.status).join(',')}`);
      assert.equal(conflicts.length, 99);
      for (const r of conflicts) assert.equal(r.json.currentStatus, 'paid', r.text);
      assert.deepEqual(await historyOf(id), ['pending', 'paid']);
      assert.equal(versionOf(await get(id)), 2, 'one write');
    });

    test('a conditional PATCH {Status: paid} racing POST /pay: exactly one wins', async () => {
      for (let round = 0; round < 10; round++) {
        const id = await create();
        const pending = await get(id);
        const [patch, pay] = await Promise.all([
          call(server.url, 'PATCH', `/api/orders/${id}`, {
            token,
            body: { Status: 'paid' },
            contentType: MERGE,
            headers: { 'if-match': pending.headers.get('etag')! },
          }),
          act(id, 'pay'),
        ]);
        const winners = [patch, pay].filter((r) => r.status === 200);
        assert.equal(winners.length, 1, `round ${round}: PATCH ${patch.status}, pay ${pay.status}`);
        const loser = winners[0] === patch ? pay : patch;
        assert.ok(loser.status === 409 || loser.status === 412, `round ${round}: loser ${loser.status} ${loser.text}`);
        if (loser.status === 409) assert.equal(loser.json.currentStatus, 'paid');
        assert.deepEqual(await historyOf(id), ['pending', 'paid'], `round ${round}`);
        assert.equal(versionOf(await get(id)), 2);
      }
    });

    test('an unconditional PATCH {Status: paid} racing POST /pay: the order is paid exactly once, by one of them', async () => {
      for (let round = 0; round < 10; round++) {
        const id = await create();
        const [patch, pay] = await Promise.all([
          call(server.url, 'PATCH', `/api/orders/${id}`, { token, body: { Status: 'paid' }, contentType: MERGE }),
          act(id, 'pay'),
        ]);
        // A PATCH arriving after the pay asks for paid → paid, which the state machine refuses like a second pay.
        const statuses = [patch.status, pay.status].sort();
        assert.deepEqual(
          statuses,
          [200, 409],
          `round ${round}: PATCH ${patch.status} ${patch.text}, pay ${pay.status}`,
        );
        for (const r of [patch, pay]) if (r.status === 409) assert.equal(r.json.currentStatus, 'paid');
        if (pay.status === 409) assert.equal(versionOf(patch), 2, 'the PATCH made the change');
        assert.deepEqual(await historyOf(id), ['pending', 'paid'], `round ${round}`);
        assert.equal(versionOf(await get(id)), 2);
      }
    });
  });
}
