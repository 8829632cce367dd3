// Reading the audit trail (docs/security.md, "The audit trail"): GET /api/admin/audit filters by actor, action,
// target and time range and pages newest first with a cursor; admin:read is required; the retention
// purge deletes only entries older than AUDIT_RETENTION, in batches.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { recordAudit, type AuditEntry } from '../../src/audit/audit.ts';
import { purgeAuditBefore } from '../../src/audit/retention.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const DAY = 86_400_000;
// Recent enough that the app's own retention purge (AUDIT_RETENTION, 365 d) keeps them.
const BASE = Math.floor(Date.now() / 1000) * 1000 - 30 * DAY;

/** Entry n, a minute after entry n-1: actors alternate, every third is a sign-in failure. */
function entry(n: number): AuditEntry {
  return {
    actor: n % 2 === 0 ? { type: 'user', id: 'usr-even' } : { type: 'client', id: 'cl_odd' },
    action: n % 3 === 0 ? 'signin.failed' : 'client.updated',
    target: { type: 'client', id: `cl_target${n % 4}` },
    outcome: n % 3 === 0 ? 'failure' : 'success',
    requestId: `req-${n}`,
    sourceAddress: '192.0.2.7',
    details: { n },
    at: new Date(BASE + n * 60_000),
  };
}

interface Item {
  Id: string;
  OccurredAtUtc: string;
  Actor: { Type: string; Id: string };
  Action: string;
  Target: { Type: string; Id: string } | null;
  Outcome: string;
  RequestId: string | null;
  SourceAddress: string | null;
  Details: { n?: number };
}

for (const dialect of testDialects()) {
  describe(`GET /api/admin/audit [${dialect}]`, () => {
    let server: TestServer;
    let reader: string;
    const COUNT = 30;
    before(async () => {
      server = await startServer(dialect);
      reader = await server.issuer.userToken('admin:read');
      for (let n = 1; n <= COUNT; n += 1) await recordAudit(server.app.database.db, entry(n));
    });
    after(() => server.close());

    const get = (query: string, token = reader): Promise<CallResult> =>
      call(server.url, 'GET', `/api/admin/audit${query}`, { token });

    /** Every page from `query` on, following `_links.next`; the numbers of the entries in order. */
    async function walk(query: string): Promise<number[]> {
      const seen: number[] = [];
      let next: string | undefined = `/api/admin/audit${query}`;
      for (let pages = 0; next; pages += 1) {
        assert.ok(pages < 50, 'the pages end');
        const page = await call(server.url, 'GET', next, { token: reader });
        assert.equal(page.status, 200, page.text);
        seen.push(...(page.json.Items as Item[]).map((i) => i.Details.n!));
        const href = page.json._links.next?.href as string | undefined;
        if (href) assert.equal(page.headers.get('link'), `<${href}>; rel="next"`);
        next = href ? href.slice(server.url.length) : undefined;
      }
      return seen;
    }

    test('an entry shows who did what to which target, when, from where and with what outcome', async () => {
      const page = await get('?limit=1');
      assert.equal(page.status, 200, page.text);
      const [item] = page.json.Items as Item[];
      assert.deepEqual(
        { ...item, Id: undefined },
        {
          Id: undefined,
          OccurredAtUtc: new Date(BASE + COUNT * 60_000).toISOString(),
          Actor: { Type: 'user', Id: 'usr-even' },
          Action: 'signin.failed',
          Target: { Type: 'client', Id: 'cl_target2' },
          Outcome: 'failure',
          RequestId: `req-${COUNT}`,
          SourceAddress: '192.0.2.7',
          Details: { n: COUNT },
        },
      );
      assert.match(item!.Id, /^aud_[0-9a-f]{24}$/);
    });

    test('cursor pages go newest first through every entry, once each', async () => {
      const all = Array.from({ length: COUNT }, (_v, i) => COUNT - i);
      assert.deepEqual(await walk('?limit=7'), all);
      assert.deepEqual(await walk(''), all, 'the default page size');
    });

    test('filters by actor, action, target and time range, alone and together, across pages', async () => {
      const expected = (keep: (n: number) => boolean): number[] =>
        Array.from({ length: COUNT }, (_v, i) => COUNT - i).filter(keep);
      assert.deepEqual(
        await walk('?actor=usr-even&limit=4'),
        expected((n) => n % 2 === 0),
      );
      assert.deepEqual(
        await walk('?action=signin.failed&limit=3'),
        expected((n) => n % 3 === 0),
      );
      assert.deepEqual(
        await walk('?target=cl_target1&limit=2'),
        expected((n) => n % 4 === 1),
      );
      const since = new Date(BASE + 10 * 60_000).toISOString();
      const until = new Date(BASE + 20 * 60_000).toISOString();
      assert.deepEqual(
        await walk(`?since=${since}&until=${until}&limit=3`),
        expected((n) => n >= 10 && n < 20),
        'since is inclusive, until exclusive',
      );
      assert.deepEqual(
        await walk(`?actor=cl_odd&action=client.updated&since=${since}&limit=2`),
        expected((n) => n % 2 === 1 && n % 3 !== 0 && n >= 10),
      );
      const none = await get('?actor=nobody');
      assert.equal(none.status, 200, none.text);
      assert.deepEqual(none.json.Items, []);
      assert.equal(none.json._links.next, undefined);
    });

    test('a bad cursor, time, action or limit is a 400 problem', async () => {
      for (const query of [
        '?cursor=bm90LWEtY3Vyc29y',
        '?cursor=%25%25',
        '?since=yesterday',
        '?until=2026-03-01',
        '?action=orders.deleted',
        '?limit=0',
        '?limit=0x10',
      ]) {
        const refused = await get(query);
        assert.equal(refused.status, 400, `${query}: ${refused.text}`);
        assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/, query);
      }
    });

    test('without admin:read: 401 without a token, 403 with other scopes or admin:write only', async () => {
      const anonymous = await call(server.url, 'GET', '/api/admin/audit');
      assert.equal(anonymous.status, 401, anonymous.text);
      for (const token of [
        await server.issuer.userToken('orders:read orders:write webhooks:manage events:read'),
        await server.issuer.clientToken('admin:write'),
      ]) {
        const refused = await get('', token);
        assert.equal(refused.status, 403, refused.text);
        assert.equal(refused.json.status, 403, refused.text);
      }
      const machine = await get('?limit=1', await server.issuer.clientToken('admin:read'));
      assert.equal(machine.status, 200, machine.text);
    });
  });

  describe(`audit retention [${dialect}]`, () => {
    let server: TestServer;
    before(async () => {
      // The app's own purge (on start, AUDIT_RETENTION) must not race this test's: keep everything.
      server = await startServer(dialect, { AUDIT_RETENTION: '3650d' });
    });
    after(() => server.close());

    test('the purge removes entries older than the cut-off only, in batches', async () => {
      const db = server.app.database.db;
      const now = Date.now();
      const cutoff = new Date(now - 365 * DAY);
      const ages = [400, 380, 366, 365.5, 364, 10, 0]; // days
      for (const [n, days] of ages.entries())
        await recordAudit(db, { ...entry(n), requestId: `age-${days}`, at: new Date(now - days * DAY) });
      const deleted = await purgeAuditBefore(db, cutoff, 2); // 4 old entries: two full batches and an empty one
      assert.equal(deleted, 4);
      const left = await db.selectFrom('audit_log').select('request_id').where('request_id', 'like', 'age-%').execute();
      assert.deepEqual(left.map((r) => r.request_id).sort(), ['age-0', 'age-10', 'age-364'].sort());
      assert.equal(await purgeAuditBefore(db, cutoff, 2), 0, 'nothing more to purge');
    });
  });
}
