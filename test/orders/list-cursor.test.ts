// List cursors are opaque but not tamper-proof: a decoded cursor is untrusted input, held to the rules of
// the parameters it carries, so a forged one is a 400 like any other bad cursor.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

const forge = (payload: unknown): string => Buffer.from(JSON.stringify(payload)).toString('base64url');

for (const dialect of testDialects()) {
  describe(`orders list cursor [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(async () => ({ server, token } = await startWithClientToken(dialect)));
    after(() => server.close());

    const list = (query: string) => call(server.url, 'GET', `/api/orders?${query}`, { token });

    test('a forged cursor is 400 invalid-parameter, never a 500 or a quietly empty page', async () => {
      expectStatus(
        await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } }),
        201,
      );
      const forged: unknown[] = [
        { b: 5, s: '', c: 'not-a-uuid' },
        { b: 5, s: '', c: `urn:uuid:${CUSTOMER}` },
        { b: 5, s: 'bogus', c: '' },
        { b: 5, s: 'PAID', c: '' },
        { b: 0, s: '', c: '' },
        { b: -3, s: '', c: '' },
        { b: 1.5, s: '', c: '' },
        { b: '5', s: '', c: '' },
        { b: 5, s: 1, c: '' },
        { b: 5, s: '', c: null },
        { b: 5, s: '', c: '', x: 1 },
        [5, '', ''],
      ];
      for (const payload of forged) {
        const res = await list(`cursor=${forge(payload)}`);
        assert.equal(res.status, 400, `${JSON.stringify(payload)}: ${res.text}`);
        assert.match(res.json.type, /\/problems\/invalid-parameter$/);
        assert.deepEqual(res.json.errors, [{ pointer: '/cursor', detail: 'invalid cursor' }]);
      }
    });

    test('limit takes decimal digits only: 0x10, 1e1, +5 and " 5" are 400, not read as numbers', async () => {
      for (const limit of ['0x10', '1e1', '%2B5', '%205', '5.0']) {
        const res = await list(`limit=${limit}`);
        assert.equal(res.status, 400, `${limit}: ${res.text}`);
        assert.deepEqual(res.json.errors, [{ pointer: '/limit', detail: 'decimal digits only' }]);
      }
      expectStatus(await list('limit=5'), 200);
    });

    test('a well-formed cursor is honoured with the filters it carries', async () => {
      const other = '44444444-4444-4444-8444-444444444444';
      const ids: number[] = [];
      for (const customer of [other, CUSTOMER, other]) {
        ids.push(
          (await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: customer, Total: 1 } })).json.Id,
        );
      }
      const res = await list(`cursor=${forge({ b: ids[2]! + 1, s: 'pending', c: other })}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.json.Items.map((o: { Id: number }) => o.Id),
        [ids[2], ids[0]],
      );
      assert.equal(
        (await list(`cursor=${forge({ b: ids[2]! + 1, s: 'pending', c: other })}&CustomerId=${other}`)).status,
        200,
        'the same filter repeated',
      );
    });
  });
}
