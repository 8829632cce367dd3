// Date validators on orders over real HTTP (RFC 9110 §13.1.3, §13.1.4): HTTP-dates have whole seconds
// (§5.6.7), orders are stamped to the millisecond. Two changes within one second must not let
// If-Unmodified-Since overwrite the second one (412, fails closed), nor make If-Modified-Since answer
// 304 for a changed order (200, fails open).
//
// Sub-second changes are arranged deterministically: the app has no injectable clock, so the test stamps
// the order's updated_at directly in the database (as if its last write had happened at that instant).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { formatHttpDate } from '../../src/http/representation/conditional.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

const MERGE = 'application/merge-patch+json';

/** A whole second an hour ago: the start of the second every test below plays in. */
const T0 = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;
const at = (ms: number): Date => new Date(T0 + ms);
/** "12:00:00 GMT": the Last-Modified of any time within T0's second. */
const SECOND_OF_T0 = formatHttpDate(at(0));
const NEXT_SECOND = formatHttpDate(at(1000));

function etagOf(res: CallResult): string {
  const etag = res.headers.get('etag');
  assert.ok(etag, `response carries an ETag: ${res.status} ${res.text}`);
  return etag;
}

for (const dialect of testDialects()) {
  describe(`orders date validators [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const create = async (): Promise<{ id: number; path: string }> => {
      const res = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 10 } });
      expectStatus(res, 201);
      return { id: res.json.Id, path: `/api/orders/${res.json.Id}` };
    };
    const get = (path: string, headers: Record<string, string> = {}) =>
      call(server.url, 'GET', path, { token, headers });
    /** As if the order's last write had been stamped `when`. */
    const stamp = async (id: number, when: Date): Promise<void> => {
      const result = await server.app.database.db
        .updateTable('orders')
        .set({ updated_at: toDbTime(when) })
        .where('id', '=', id)
        .executeTakeFirst();
      assert.equal(Number(result.numUpdatedRows), 1, `order ${id} stamped`);
    };

    test('two changes within one second: If-Unmodified-Since with the first Last-Modified is 412 and nothing changes', async () => {
      const { id, path } = await create();
      await stamp(id, at(100)); // first version, 12:00:00.100
      const first = await get(path);
      expectStatus(first, 200);
      const firstLastModified = first.headers.get('last-modified');
      assert.equal(firstLastModified, SECOND_OF_T0, 'Last-Modified is the second, milliseconds truncated');

      // Another client changes the order 600 ms later, within the same second.
      expectStatus(await call(server.url, 'PATCH', path, { token, body: { Total: 20 }, contentType: MERGE }), 200);
      await stamp(id, at(700));
      const second = await get(path);
      assert.equal(second.headers.get('last-modified'), firstLastModified, 'both versions share one HTTP-date');

      const writes: [string, string, unknown, string?][] = [
        ['PATCH', path, { Total: 30 }, MERGE],
        ['PATCH', path, [{ op: 'replace', path: '/Total', value: 30 }], 'application/json-patch+json'],
        ['PUT', path, { CustomerId: CUSTOMER, Currency: 'USD', Total: 30 }],
      ];
      for (const [method, target, body, contentType] of writes) {
        const res = await call(server.url, method, target, {
          token,
          body,
          contentType,
          headers: { 'if-unmodified-since': firstLastModified! },
        });
        assert.equal(
          res.status,
          412,
          `${method} ${JSON.stringify(body)} must not overwrite the second change: ${res.text}`,
        );
        assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      }
      const now = await get(path);
      assert.equal(now.json.Total, 20, 'the second change survived');
      assert.equal(now.json.UpdatedAtUtc, at(700).toISOString());
      assert.equal(etagOf(now), etagOf(second), 'nothing was written');
    });

    test('If-Unmodified-Since of the same second is 412 on DELETE and every action; a later date proceeds', async () => {
      const { id, path } = await create();
      const unmodifiedSince = (method: string, target: string, date: string) =>
        call(server.url, method, target, { token, headers: { 'if-unmodified-since': date } });

      await stamp(id, at(400));
      for (const [method, target] of [
        ['DELETE', path],
        ['POST', `${path}/pay`],
        ['POST', `${path}/cancel`],
      ] as const) {
        const res = await unmodifiedSince(method, target, SECOND_OF_T0);
        assert.equal(res.status, 412, `${method} ${target} at 12:00:00.400 vs 12:00:00: ${res.text}`);
      }
      const pending = await get(path);
      assert.equal(pending.json.Status, 'pending', 'no action was applied');

      expectStatus(await unmodifiedSince('POST', `${path}/pay`, NEXT_SECOND), 200);
      await stamp(id, at(400));
      expectStatus(await unmodifiedSince('POST', `${path}/ship`, SECOND_OF_T0), 412);
      expectStatus(await unmodifiedSince('POST', `${path}/ship`, NEXT_SECOND), 200);
      await stamp(id, at(400));
      expectStatus(await unmodifiedSince('POST', `${path}/deliver`, SECOND_OF_T0), 412);
      const delivered = await unmodifiedSince('POST', `${path}/deliver`, NEXT_SECOND);
      expectStatus(delivered, 200);
      assert.equal(delivered.json.Status, 'delivered');

      const other = await create();
      await stamp(other.id, at(400));
      expectStatus(await unmodifiedSince('DELETE', other.path, SECOND_OF_T0), 412);
      expectStatus(await get(other.path), 200);
      expectStatus(await unmodifiedSince('DELETE', other.path, NEXT_SECOND), 204);
    });

    test('an order stored exactly on the second: its own Last-Modified passes If-Unmodified-Since', async () => {
      const { id, path } = await create();
      await stamp(id, at(0));
      const lastModified = (await get(path)).headers.get('last-modified')!;
      assert.equal(lastModified, SECOND_OF_T0);
      const res = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 11 },
        contentType: MERGE,
        headers: { 'if-unmodified-since': lastModified },
      });
      expectStatus(res, 200);
      assert.equal(res.json.Total, 11);
    });

    test('GET with If-Modified-Since after a sub-second change is 200 with the body; a truly unchanged order is 304', async () => {
      const { id, path } = await create();
      await stamp(id, at(400));
      for (const method of ['GET', 'HEAD']) {
        const res = await call(server.url, method, path, { token, headers: { 'if-modified-since': SECOND_OF_T0 } });
        assert.equal(res.status, 200, `${method}: 12:00:00.400 is later than 12:00:00 (fails open): ${res.text}`);
      }
      const changed = await get(path, { 'if-modified-since': SECOND_OF_T0 });
      assert.equal(changed.json.Id, id, 'the representation is sent');
      assert.equal(changed.json.UpdatedAtUtc, at(400).toISOString());

      const unchanged = await get(path, { 'if-modified-since': NEXT_SECOND });
      expectStatus(unchanged, 304);
      assert.equal(unchanged.text, '');
      await stamp(id, at(0));
      expectStatus(await get(path, { 'if-modified-since': SECOND_OF_T0 }), 304);
      expectStatus(
        await call(server.url, 'HEAD', path, { token, headers: { 'if-modified-since': SECOND_OF_T0 } }),
        304,
      );
    });

    test('echoing a Last-Modified with cut-off milliseconds fails closed; If-Match with the ETag is the exact validator', async () => {
      const { id, path } = await create();
      await stamp(id, at(999));
      const full = await get(path);
      assert.equal(full.headers.get('last-modified'), SECOND_OF_T0, 'truncated, not rounded up');
      const byDate = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 12 },
        contentType: MERGE,
        headers: { 'if-unmodified-since': full.headers.get('last-modified')! },
      });
      expectStatus(byDate, 412);
      const byTag = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 12 },
        contentType: MERGE,
        headers: { 'if-match': etagOf(full), 'if-unmodified-since': full.headers.get('last-modified')! },
      });
      assert.equal(
        byTag.status,
        200,
        `If-Match is evaluated instead of If-Unmodified-Since (RFC 9110 §13.2.2): ${byTag.text}`,
      );
      const revalidated = await get(path, {
        'if-none-match': etagOf(byTag),
        'if-modified-since': formatHttpDate(at(-60_000)),
      });
      assert.equal(revalidated.status, 304, 'If-None-Match is evaluated instead of If-Modified-Since');
    });

    test('the date precondition is checked in the same compare-and-set as the write: 20 racing writers, one wins', async () => {
      const { id, path } = await create();
      await stamp(id, at(0));
      const headers = { 'if-unmodified-since': SECOND_OF_T0 };
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          if (i % 7 === 6) return call(server.url, 'POST', `${path}/pay`, { token, headers });
          return i % 2 === 0
            ? call(server.url, 'PATCH', path, { token, body: { Total: 100 + i }, contentType: MERGE, headers })
            : call(server.url, 'PUT', path, {
                token,
                body: { CustomerId: CUSTOMER, Currency: 'USD', Total: 100 + i },
                headers,
              });
        }),
      );
      const statuses = responses.map((r) => r.status).join(',');
      const ok = responses.filter((r) => r.status === 200);
      assert.equal(ok.length, 1, `exactly one write saw the order unmodified since the date: ${statuses}`);
      // The others lost to it: 412 (the order was modified), or 409 when the pay won and a field change
      // met a paid order (the state rule is answered first).
      assert.ok(
        responses.every((r) => r.status === 200 || r.status === 412 || r.status === 409),
        `statuses: ${statuses}`,
      );
      const now = await get(path);
      assert.equal(now.json.Total, ok[0]!.json.Total, 'the one that succeeded is what is stored');
      assert.equal(now.json.Status, ok[0]!.json.Status);
      assert.equal(etagOf(now), etagOf(ok[0]!));
    });
  });
}
