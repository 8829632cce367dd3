// Refused admin requests are in the audit trail (docs/security.md, "The audit trail"): a 401 or 403 from
// /api/admin/… is recorded as `admin.request_denied` with who asked, which route and from where, and a
// flood of them from one address cannot flood the trail (src/operator/denied-requests.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DeniedRequestBudget } from '../../src/operator/denied-requests.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

interface Entry {
  Actor: { Type: string; Id: string };
  Action: string;
  Target: { Type: string; Id: string } | null;
  Outcome: string;
  RequestId: string | null;
  SourceAddress: string | null;
  Details: { status?: number; held_back_before?: number };
}

for (const dialect of testDialects()) {
  describe(`denied admin requests in the audit trail [${dialect}]`, () => {
    let server: TestServer;
    let reader: string;
    before(async () => {
      server = await startServer(dialect);
      reader = await server.issuer.userToken('admin:read');
    });
    after(() => server.close());

    async function denied(): Promise<Entry[]> {
      const page = await call(server.url, 'GET', '/api/admin/audit?action=admin.request_denied&limit=100', {
        token: reader,
      });
      assert.equal(page.status, 200, JSON.stringify(page.json));
      return page.json.Items as Entry[];
    }

    test('no token (401) and a token without the admin scope (403) are both recorded, with route, status and address', async () => {
      const anonymous = await call(server.url, 'GET', '/api/admin/users');
      assert.equal(anonymous.status, 401, JSON.stringify(anonymous.json));
      const ordersOnly = await server.issuer.userToken('orders:read', 'usr-prober');
      const forbidden = await call(server.url, 'POST', '/api/admin/users', {
        token: ordersOnly,
        body: { Email: 'x@example.com', Name: 'X', Roles: ['admin'] },
      });
      assert.equal(forbidden.status, 403, JSON.stringify(forbidden.json));
      let entries: Entry[] = [];
      await waitUntil(
        async () => (entries = await denied()).length >= 2,
        10_000,
        () => `two denied entries, found ${JSON.stringify(entries)}`,
      );
      const byStatus = new Map(entries.map((e) => [e.Details.status, e]));
      const unauthenticated = byStatus.get(401)!;
      assert.deepEqual(unauthenticated.Actor, { Type: 'anonymous', Id: '127.0.0.1' }, JSON.stringify(unauthenticated));
      assert.deepEqual(unauthenticated.Target, { Type: 'route', Id: 'GET /api/admin/users' });
      assert.equal(unauthenticated.Outcome, 'failure');
      assert.equal(unauthenticated.SourceAddress, '127.0.0.1');
      const refused = byStatus.get(403)!;
      assert.deepEqual(refused.Actor, { Type: 'user', Id: 'usr-prober' }, JSON.stringify(refused));
      assert.deepEqual(refused.Target, { Type: 'route', Id: 'POST /api/admin/users' });
      assert.ok(refused.RequestId, 'the request id ties the entry to the logs');
    });

    test('a flood of refused requests from one address records 10 a minute, not one entry each', async () => {
      const before = (await denied()).length;
      for (let i = 0; i < 40; i += 1) {
        const answer = await call(server.url, 'GET', '/api/admin/clients');
        assert.equal(answer.status, 401);
      }
      // The budget allows 10 per address a minute, two of which the test above used.
      let entries: Entry[] = [];
      await waitUntil(
        async () => (entries = await denied()).length >= 10,
        10_000,
        () => `ten denied entries, found ${entries.length}`,
      );
      const recorded = entries.length - before;
      assert.equal(recorded, 8, `recorded ${recorded} of 40 (before: ${before})`);
      // Requests that are answered are not slowed or failed by the budget: all 40 got their 401 above.
    });
  });
}

describe('the budget of denied-request entries', () => {
  test('10 per address and 100 in all per minute; what was held back is counted in the next entry', () => {
    let now = 1_000_000;
    const budget = new DeniedRequestBudget(() => now);
    for (let i = 0; i < 10; i += 1) assert.equal(budget.admit('192.0.2.1'), 0);
    for (let i = 0; i < 5; i += 1) assert.equal(budget.admit('192.0.2.1'), undefined);
    assert.equal(budget.admit('192.0.2.2'), 5, 'another address is let through, reporting the 5 held back');
    // 11 let through so far; 90 more from nine addresses reach the cap of 100 one short of the end.
    let admitted = 0;
    for (let n = 3; n <= 11; n += 1)
      for (let i = 0; i < 10; i += 1) if (budget.admit(`192.0.2.${n}`) !== undefined) admitted += 1;
    assert.equal(admitted, 89);
    assert.equal(budget.admit('192.0.2.200'), undefined, 'the instance-wide cap of 100 holds');
    now += 60_000;
    assert.equal(budget.admit('192.0.2.1'), 2, 'a new window: let through, with the 2 held back since');
  });
});
