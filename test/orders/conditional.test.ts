// Conditional requests on orders over real HTTP (RFC 9110 §13, §15.4.5): 304 for reads whose copy is
// current, 412 for writes against a stale representation, and when preconditions are ignored.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { toDbTime } from '../../src/db/codecs.ts';
import { formatHttpDate } from '../../src/http/representation/conditional.ts';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

const MERGE = 'application/merge-patch+json';

function etagOf(res: CallResult): string {
  const etag = res.headers.get('etag');
  assert.ok(etag, 'response carries an ETag');
  return etag;
}

for (const dialect of testDialects()) {
  describe(`orders conditional requests [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const create = async (): Promise<CallResult> => {
      const res = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 10 } });
      expectStatus(res, 201);
      return res;
    };
    const get = (path: string, headers: Record<string, string> = {}) =>
      call(server.url, 'GET', path, { token, headers });
    /**
     * Stamps the order's last write on a whole second, which its Last-Modified then states exactly:
     * otherwise the cut-off milliseconds make that date earlier than the change (date-validators.test.ts).
     */
    const onWholeSecond = async (id: number): Promise<void> => {
      const second = new Date(Math.floor((Date.now() - 60_000) / 1000) * 1000);
      await server.app.database.db
        .updateTable('orders')
        .set({ updated_at: toDbTime(second) })
        .where('id', '=', id)
        .execute();
    };

    test('GET with If-None-Match of the current ETag is 304 with an empty body, ETag, Cache-Control and Vary', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const full = await get(path);
      expectStatus(full, 200);
      const etag = etagOf(full);
      const res = await get(path, { 'if-none-match': etag });
      expectStatus(res, 304);
      assert.equal(res.text, '');
      assert.equal(res.headers.get('etag'), etag);
      assert.equal(res.headers.get('cache-control'), full.headers.get('cache-control'));
      assert.equal(res.headers.get('vary'), full.headers.get('vary'));
      assert.ok(res.headers.get('vary'), 'Vary is sent on the 304 as on the 200');
      const head = await call(server.url, 'HEAD', path, { token, headers: { 'if-none-match': etag } });
      assert.equal(head.status, 304, 'HEAD is conditional like GET');
    });

    test('responses are private and must be revalidated: Cache-Control is "private, no-cache"', async () => {
      const created = await create();
      assert.equal(created.headers.get('cache-control'), 'private, no-cache');
      const path = `/api/orders/${created.json.Id}`;
      const full = await get(path);
      assert.equal(full.headers.get('cache-control'), 'private, no-cache');
      assert.equal(
        (await get(path, { 'if-none-match': etagOf(full) })).headers.get('cache-control'),
        'private, no-cache',
      );
      assert.equal((await get('/api/orders?limit=1')).headers.get('cache-control'), 'private, no-cache');
    });

    test('If-None-Match matches "*" and any member of a list, and ignores W/ (weak comparison)', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const etag = etagOf(await get(path));
      for (const value of [
        '*',
        `"nope", ${etag}`,
        `${etag},"other"`,
        ` "a" ,, ${etag} `,
        `W/${etag}`,
        `"x", W/${etag}`,
      ]) {
        const res = await get(path, { 'if-none-match': value });
        assert.equal(res.status, 304, value);
        assert.equal(res.headers.get('etag'), etag, value);
      }
    });

    test('a stale or non-matching If-None-Match gets 200 with the full representation', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const stale = etagOf(created);
      await call(server.url, 'POST', `${path}/pay`, { token });
      const res = await get(path, { 'if-none-match': stale });
      expectStatus(res, 200);
      assert.equal(res.json.Status, 'paid');
      assert.notEqual(etagOf(res), stale);
      for (const value of ['"other"', 'W/"other"', `"a", "b"`, 'not-a-tag']) {
        assert.equal((await get(path, { 'if-none-match': value })).status, 200, value);
      }
    });

    test('If-Modified-Since with the Last-Modified value is 304; it is ignored when a non-matching If-None-Match is present', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      await onWholeSecond(created.json.Id);
      const full = await get(path);
      const lastModified = full.headers.get('last-modified');
      assert.ok(lastModified);
      assert.equal(lastModified, formatHttpDate(new Date(full.json.UpdatedAtUtc)));
      const res = await get(path, { 'if-modified-since': lastModified });
      expectStatus(res, 304);
      assert.equal(res.text, '');
      assert.equal(res.headers.get('etag'), etagOf(full));
      const later = formatHttpDate(new Date(Date.parse(full.json.UpdatedAtUtc) + 86_400_000));
      expectStatus(await get(path, { 'if-modified-since': later }), 304);
      const earlier = formatHttpDate(new Date(Date.parse(full.json.UpdatedAtUtc) - 86_400_000));
      expectStatus(await get(path, { 'if-modified-since': earlier }), 200);
      const both = await get(path, { 'if-modified-since': lastModified, 'if-none-match': '"something-else"' });
      assert.equal(both.status, 200, 'If-None-Match takes precedence over If-Modified-Since (RFC 9110 §13.1.3)');
      assert.equal(both.json.Id, created.json.Id);
      assert.equal((await get(path, { 'if-modified-since': 'yesterday' })).status, 200, 'an invalid date is ignored');
    });

    test('ETags differ between fields= and include= variants and change with every write', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const variants = [
        path,
        `${path}?fields=Id,Total`,
        `${path}?fields=Id`,
        `${path}?include=history`,
        `${path}?fields=Id,Total&include=history`,
      ];
      const tags = await Promise.all(variants.map(async (v) => etagOf(await get(v))));
      assert.equal(new Set(tags).size, variants.length, tags.join(' '));
      const fieldsTag = tags[1]!;
      assert.equal(
        (await get(`${path}?fields=Id,Total`, { 'if-none-match': fieldsTag })).status,
        304,
        'each variant validates against its own tag',
      );
      assert.equal(
        (await get(path, { 'if-none-match': fieldsTag })).status,
        200,
        "another variant's tag does not match",
      );
      assert.equal(
        (await get(`${path}?fields=Id,Id,Total`)).headers.get('etag'),
        fieldsTag,
        'duplicates name the same variant',
      );

      const seen = new Set(tags);
      const writes: [string, string, unknown, string?][] = [
        ['PUT', path, { CustomerId: CUSTOMER, Currency: 'USD', Total: 11 }],
        ['PATCH', path, { Total: 12 }, MERGE],
        ['PATCH', path, [{ op: 'replace', path: '/Currency', value: 'EUR' }], 'application/json-patch+json'],
        ['POST', `${path}/pay`, undefined],
        ['POST', `${path}/ship`, undefined],
        ['POST', `${path}/deliver`, undefined],
      ];
      for (const [method, target, body, contentType] of writes) {
        const res = await call(server.url, method, target, { token, body, contentType });
        assert.ok(res.status >= 200 && res.status < 300, `${method} ${target}: ${res.status} ${res.text}`);
        const now = await Promise.all(
          [path, `${path}?fields=Id,Total`, `${path}?include=history`].map(async (v) => etagOf(await get(v))),
        );
        assert.equal(res.headers.get('etag'), now[0], `${method} returns the new ETag`);
        for (const tag of now) {
          assert.ok(!seen.has(tag), `${method} ${target} changed every variant's ETag (${tag} seen before)`);
          seen.add(tag);
        }
      }
    });

    test('a write with a stale If-Match is 412 and changes nothing: PUT, PATCH, DELETE, pay', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const stale = etagOf(created);
      const fresh = await call(server.url, 'PATCH', path, { token, body: { Total: 20 }, contentType: MERGE });
      expectStatus(fresh, 200);
      const current = etagOf(fresh);
      const attempts: [string, string, unknown, string?][] = [
        ['PUT', path, { CustomerId: CUSTOMER, Currency: 'USD', Total: 30 }],
        ['PATCH', path, { Total: 30 }, MERGE],
        ['DELETE', path, undefined],
        ['POST', `${path}/pay`, undefined],
      ];
      for (const [method, target, body, contentType] of attempts) {
        const res = await call(server.url, method, target, {
          token,
          body,
          contentType,
          headers: { 'if-match': stale },
        });
        assert.equal(res.status, 412, `${method} ${target}`);
        assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
        assert.equal(res.json.status, 412);
        assert.equal(res.headers.get('etag'), current, 'the 412 tells the client the current ETag');
      }
      const after = await get(path);
      assert.equal(after.json.Total, 20);
      assert.equal(after.json.Status, 'pending');
      assert.equal(etagOf(after), current);
      const noneMatches = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 31 },
        contentType: MERGE,
        headers: { 'if-match': `"nope", ${stale}` },
      });
      assert.equal(noneMatches.status, 412, 'no member of the list matches');
    });

    test('a write with the current If-Match succeeds: PUT, PATCH, pay, DELETE', async () => {
      const a = await create();
      const path = `/api/orders/${a.json.Id}`;
      const put = await call(server.url, 'PUT', path, {
        token,
        body: { CustomerId: CUSTOMER, Currency: 'USD', Total: 30 },
        headers: { 'if-match': etagOf(a) },
      });
      expectStatus(put, 200);
      const patch = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 31 },
        contentType: MERGE,
        headers: { 'if-match': `"other", ${etagOf(put)}` },
      });
      expectStatus(patch, 200);
      assert.equal(patch.json.Total, 31);
      const variantTag = etagOf(await get(`${path}?fields=Id`));
      const pay = await call(server.url, 'POST', `${path}/pay`, { token, headers: { 'if-match': variantTag } });
      assert.equal(pay.status, 200, 'any variant of the current version describes the same state');
      assert.equal(pay.json.Status, 'paid');
      const b = await create();
      const del = await call(server.url, 'DELETE', `/api/orders/${b.json.Id}`, {
        token,
        headers: { 'if-match': etagOf(b) },
      });
      expectStatus(del, 204);
    });

    test('concurrent writes with the same If-Match: exactly one succeeds, the others get 412 (no lost update)', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const etag = etagOf(created);
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          i % 2 === 0
            ? call(server.url, 'PATCH', path, {
                token,
                body: { Total: 100 + i },
                contentType: MERGE,
                headers: { 'if-match': etag },
              })
            : call(server.url, 'PUT', path, {
                token,
                body: { CustomerId: CUSTOMER, Currency: 'USD', Total: 100 + i },
                headers: { 'if-match': etag },
              }),
        ),
      );
      const ok = responses.filter((r) => r.status === 200);
      assert.equal(ok.length, 1, `statuses: ${responses.map((r) => r.status).join(',')}`);
      assert.equal(responses.filter((r) => r.status === 412).length, 19);
      const now = await get(path);
      assert.equal(now.json.Total, ok[0]!.json.Total, 'the one that succeeded is what is stored');
      assert.equal(etagOf(now), etagOf(ok[0]!));
    });

    test('writes without preconditions never get 412, even when they race each other', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const totals = Array.from({ length: 20 }, (_, i) => 200 + i);
      const responses = await Promise.all(
        totals.map((total, i) =>
          i % 2 === 0
            ? call(server.url, 'PATCH', path, { token, body: { Total: total }, contentType: MERGE })
            : call(server.url, 'PUT', path, { token, body: { CustomerId: CUSTOMER, Currency: 'USD', Total: total } }),
        ),
      );
      assert.deepEqual(
        responses.map((r) => r.status),
        totals.map(() => 200),
        'a 412 needs a precondition the client sent (RFC 9110 §15.5.13)',
      );
      const now = await get(path);
      assert.ok(totals.includes(now.json.Total));
      assert.ok(
        responses.some((r) => r.headers.get('etag') === etagOf(now)),
        'the stored state is one of the responses',
      );
    });

    test('concurrent merge patches of different members both take effect: a patch never writes back a stale copy', async () => {
      const customers = ['aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb'];
      for (let round = 0; round < 10; round++) {
        const created = await create();
        const path = `/api/orders/${created.json.Id}`;
        const customer = customers[round % 2]!;
        const [a, b] = await Promise.all([
          call(server.url, 'PATCH', path, { token, body: { CustomerId: customer }, contentType: MERGE }),
          call(server.url, 'PATCH', path, {
            token,
            body: [{ op: 'replace', path: '/Total', value: 77 }],
            contentType: 'application/json-patch+json',
          }),
        ]);
        assert.equal(a.status, 200, `round ${round}: ${a.text}`);
        assert.equal(b.status, 200, `round ${round}: ${b.text}`);
        const now = (await get(path)).json;
        assert.equal(now.CustomerId, customer, `round ${round}: the CustomerId change survived`);
        assert.equal(now.Total, 77, `round ${round}: the Total change survived`);
      }
    });

    test('If-Match uses strong comparison: a weak tag never matches', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const res = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 2 },
        contentType: MERGE,
        headers: { 'if-match': `W/${etagOf(created)}` },
      });
      expectStatus(res, 412);
    });

    test('If-Match: * succeeds for an existing order: PUT, PATCH, pay, DELETE', async () => {
      const a = await create();
      const path = `/api/orders/${a.json.Id}`;
      const star = { 'if-match': '*' };
      expectStatus(
        await call(server.url, 'PUT', path, {
          token,
          body: { CustomerId: CUSTOMER, Currency: 'USD', Total: 40 },
          headers: star,
        }),
        200,
      );
      expectStatus(
        await call(server.url, 'PATCH', path, { token, body: { Total: 41 }, contentType: MERGE, headers: star }),
        200,
      );
      expectStatus(await call(server.url, 'POST', `${path}/pay`, { token, headers: star }), 200);
      const b = await create();
      expectStatus(await call(server.url, 'DELETE', `/api/orders/${b.json.Id}`, { token, headers: star }), 204);
    });

    test('If-Match on a missing order is 404, not 412: preconditions are ignored when the response would not be 2xx', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const etag = etagOf(created);
      expectStatus(await call(server.url, 'DELETE', path, { token }), 204);
      const missing = [
        ['PUT', path, { CustomerId: CUSTOMER, Currency: 'USD', Total: 1 }],
        ['PATCH', path, { Total: 1 }, MERGE],
        ['DELETE', path, undefined],
        ['POST', `${path}/pay`, undefined],
        ['GET', path, undefined],
      ] as const;
      const conditions: Record<string, string>[] = [
        { 'if-match': etag },
        { 'if-match': '*' },
        { 'if-match': '"stale"' },
        { 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' },
      ];
      for (const headers of conditions) {
        for (const [method, target, body, contentType] of missing) {
          const res = await call(server.url, method, target, { token, body, contentType, headers });
          assert.equal(res.status, 404, `${method} ${JSON.stringify(headers)}`);
        }
      }
    });

    test('a stale If-Match on a transition the state forbids is 409, not 412 (the request would fail anyway)', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      expectStatus(await call(server.url, 'POST', `${path}/pay`, { token }), 200);
      const forbidden: [string, string, unknown, string?][] = [
        ['POST', `${path}/pay`, undefined],
        ['PUT', path, { CustomerId: CUSTOMER, Total: 11, Currency: 'USD' }], // a paid order's fields cannot change
        ['PATCH', path, { Total: 11 }, MERGE],
        ['PATCH', path, { Status: 'pending' }, MERGE], // no way back
        ['PATCH', path, [{ op: 'replace', path: '/Status', value: 'cancelled' }], 'application/json-patch+json'],
      ];
      for (const [method, target, body, contentType] of forbidden) {
        const res = await call(server.url, method, target, {
          token,
          body,
          contentType,
          headers: { 'if-match': etagOf(created) },
        });
        assert.equal(res.status, 409, `${method} ${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.json.currentStatus, 'paid');
      }
    });

    test('If-Unmodified-Since in the past is 412; at or after Last-Modified the write proceeds', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      await onWholeSecond(created.json.Id);
      const full = await get(path);
      const lastModified = full.headers.get('last-modified')!;
      const past = formatHttpDate(new Date(Date.parse(full.json.UpdatedAtUtc) - 60_000));
      for (const [method, target, body, contentType] of [
        ['PUT', path, { CustomerId: CUSTOMER, Currency: 'USD', Total: 2 }],
        ['PATCH', path, { Total: 2 }, MERGE],
        ['POST', `${path}/pay`, undefined],
        ['DELETE', path, undefined],
      ] as const) {
        const res = await call(server.url, method, target, {
          token,
          body,
          contentType,
          headers: { 'if-unmodified-since': past },
        });
        assert.equal(res.status, 412, method);
      }
      assert.equal(etagOf(await get(path)), etagOf(full), 'nothing changed');
      const res = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 3 },
        contentType: MERGE,
        headers: { 'if-unmodified-since': lastModified },
      });
      expectStatus(res, 200);
      const ignored = await call(server.url, 'PATCH', path, {
        token,
        body: { Total: 4 },
        contentType: MERGE,
        headers: { 'if-match': etagOf(res), 'if-unmodified-since': past },
      });
      assert.equal(ignored.status, 200, 'If-Unmodified-Since is ignored when If-Match is present (RFC 9110 §13.1.4)');
    });

    test('GET with a stale If-Match is 412; with the current one it is 200', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      expectStatus(await get(path, { 'if-match': '"stale"' }), 412);
      expectStatus(await get(path, { 'if-match': etagOf(created) }), 200);
    });

    test('validators are per caller: another customer cannot probe an order with conditional headers', async () => {
      const created = await create();
      const path = `/api/orders/${created.json.Id}`;
      const other = await server.issuer.userToken('orders:read orders:write', randomUUID());
      const res = await call(server.url, 'GET', path, { token: other, headers: { 'if-none-match': '*' } });
      expectStatus(res, 404);
    });
  });
}
