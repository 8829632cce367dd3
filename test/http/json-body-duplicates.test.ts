// A member name repeated within one JSON object is a 400 naming it, at any depth and under any spelling
// (escapes are decoded before names are compared), on every route that reads a JSON body: JSON.parse
// would keep the last, where a gateway may have checked the first (RFC 8259 §4, RFC 7493 §2.3).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const SCOPES = 'orders:read orders:write webhooks:manage';
const C = `"CustomerId":"${CUSTOMER}"`;

/** A 400 malformed-body that names `name` as repeated and points at it. */
function expectDuplicate(res: CallResult, name: string, pointer: string): void {
  const problem = expectProblem(res, 400, 'malformed-body', `duplicate ${JSON.stringify(name)}`);
  assert.ok(
    String(problem.detail).startsWith(
      `the member name ${JSON.stringify(name)} appears more than once in the same object`,
    ),
    `detail names ${JSON.stringify(name)}: ${res.text}`,
  );
  assert.deepEqual(
    (problem.errors as { pointer: string }[]).map((e) => e.pointer),
    [pointer],
    res.text,
  );
}

for (const dialect of testDialects()) {
  describe(`duplicate member names in JSON bodies [${dialect}]`, { timeout: 120_000 }, () => {
    let server: TestServer;
    let token: string;
    before(async () => {
      server = await startServer(dialect);
      token = await server.issuer.clientToken(SCOPES);
    });
    after(() => server.close());

    const post = (rawBody: string) => call(server.url, 'POST', '/api/orders', { token, rawBody });
    const orderCount = async (): Promise<number> => {
      const list = await call(server.url, 'GET', '/api/orders?limit=100', { token });
      expectStatus(list, 200);
      return list.json.Items.length;
    };
    const newOrder = async (): Promise<string> => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 10 },
      });
      expectStatus(created, 201);
      return `/api/orders/${created.json.Id}`;
    };

    test('POST /api/orders: a name repeated at the top level, nested or in an array, under any spelling, is 400 and creates nothing', async () => {
      const before = await orderCount();
      const cases: [body: string, name: string, pointer: string][] = [
        [`{${C},"Total":1,"Total":2}`, 'Total', '/Total'],
        [`{${C},"Total":1,"\\u0054otal":2}`, 'Total', '/Total'],
        [`{${C},"\\u0054\\u006F\\u0074\\u0061\\u006c":1,"Total":2}`, 'Total', '/Total'],
        [`{"\\u0043ustomerId":"${CUSTOMER}","Total":1,${C}}`, 'CustomerId', '/CustomerId'],
        [`{${C},"Total":1,"a/b":1,"a\\/b":2}`, 'a/b', '/a~1b'],
        [`{${C},"Total":1,"\\"":1,"\\u0022":2}`, '"', '/"'],
        [`{${C},"Total":1,"\\\\":1,"\\u005C":2}`, '\\', '/\\'],
        [`{${C},"Total":1,"tab\\t":1,"tab\\u0009":2}`, 'tab\t', '/tab\t'],
        [`{${C},"Total":1,"\\ud83d\\ude00":1,"😀":2}`, '😀', '/😀'],
        [`{${C},"Total":1,"\\uD83D\\uDE00":1,"\\ud83d\\ude00":2}`, '😀', '/😀'],
        [`{${C},"Total":1,"\\ud800":1,"\\uD800":2}`, '\ud800', '/\ud800'],
        [`{${C},"Total":1,"X":{"k":1,"k":2}}`, 'k', '/X/k'],
        [`{${C},"Total":1,"X":[1,{"k":"k"},{"k":1,"\\u006b":2}]}`, 'k', '/X/2/k'],
        [`{${C},"Total":1,"X":{"a~b":[[{"q":1,"q":2}]]}}`, 'q', '/X/a~0b/0/0/q'],
      ];
      for (const [body, name, pointer] of cases) expectDuplicate(await post(body), name, pointer);
      const nested = await post(`{${C},"Total":1,"X":[1,{"k":1,"k":2}]}`);
      expectDuplicate(nested, 'k', '/X/1/k');
      assert.match(nested.json.detail, /\(the object at \/X\/1\)$/, nested.text);
      assert.equal(await orderCount(), before, 'no order was created');
    });

    test('text that is not JSON gets the syntax error, even with a repeated name; equal names in different objects are fine', async () => {
      for (const broken of [`{${C},"Total":1,"Total":2`, `{${C},"Total":1,"Total":2}x`, `{"Total":1,"Total":}`]) {
        const res = await post(broken);
        expectProblem(res, 400, 'malformed-body');
        assert.match(res.json.detail, /^the body is not valid JSON/, res.text);
      }
      // Inside strings, names and braces are only characters; siblings may reuse names.
      const path = await newOrder();
      const siblings = await call(server.url, 'PATCH', path, {
        token,
        contentType: JSON_PATCH,
        rawBody:
          '[{"op":"test","path":"/Currency","value":"USD"},{"op":"replace","path":"/Total","value":11},' +
          '{"op":"test","path":"/Total","value":11}]',
      });
      expectStatus(siblings, 200);
      const tricky = await post(`{"CustomerId":"${CUSTOMER}","Currency":"\\",\\"Total\\":{\\"Total","Total":3}`);
      expectProblem(tricky, 422, 'validation-error'); // parsed: no duplicate; then Currency is not a currency
      const dup = await post(`{${C},"Total":1,"Total":2}`);
      expectDuplicate(dup, 'Total', '/Total');
    });

    test('PATCH /api/orders/{id}: a repeated name in a merge patch or inside a JSON Patch operation is 400 and changes nothing', async () => {
      const path = await newOrder();
      const patch = (contentType: string, rawBody: string) =>
        call(server.url, 'PATCH', path, { token, contentType, rawBody });
      expectDuplicate(await patch(MERGE, '{"Total":3,"Total":4}'), 'Total', '/Total');
      expectDuplicate(await patch(MERGE, '{"\\u0054otal":3,"Total":4}'), 'Total', '/Total');
      expectDuplicate(
        await patch(JSON_PATCH, '[{"op":"replace","path":"/Total","value":3,"value":4}]'),
        'value',
        '/0/value',
      );
      expectDuplicate(
        await patch(
          JSON_PATCH,
          '[{"op":"test","path":"/Total","value":10},{"op":"replace","\\u0070ath":"/Currency","path":"/Total","value":5}]',
        ),
        'path',
        '/1/path',
      );
      const order = await call(server.url, 'GET', path, { token });
      assert.equal(order.json.Total, 10, `unchanged: ${order.text}`);
    });

    test('the webhook API: a repeated name in a create or a PATCH is 400 and stores nothing', async () => {
      const create = (rawBody: string) => call(server.url, 'POST', '/api/webhooks', { token, rawBody });
      expectDuplicate(
        await create('{"Url":"https://example.com/a","Events":["*"],"Url":"https://example.com/b"}'),
        'Url',
        '/Url',
      );
      expectDuplicate(
        await create('{"Url":"https://example.com/a","Events":["*"],"Description":"x","\\u0044escription":"y"}'),
        'Description',
        '/Description',
      );
      expectDuplicate(
        await create('{"Url":"https://example.com/a","Secret":"whsec_a","Events":["*"],"Secre\\u0074":"whsec_b"}'),
        'Secret',
        '/Secret',
      );
      const listed = await call(server.url, 'GET', '/api/webhooks', { token });
      expectStatus(listed, 200);
      assert.deepEqual(listed.json.Items, [], `nothing registered: ${listed.text}`);

      const created = await create('{"Url":"https://example.com/a","Events":["*"],"Description":"first"}');
      expectStatus(created, 201);
      const endpoint = `/api/webhooks/${created.json.Id}`;
      const changed = await call(server.url, 'PATCH', endpoint, {
        token,
        rawBody: '{"Description":"second","Descr\\u0069ption":"third"}',
      });
      expectDuplicate(changed, 'Description', '/Description');
      const read = await call(server.url, 'GET', endpoint, { token });
      assert.equal(read.json.Description, 'first', read.text);
    });
  });
}
