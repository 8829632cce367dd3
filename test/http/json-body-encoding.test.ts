// JSON bodies are UTF-8 (RFC 8259 §8.1): a malformed byte sequence is a 400 and nothing is stored (it
// used to become U+FFFD), a leading byte order mark is a 400 saying so, and a Content-Type naming
// another charset is a 415. The body size limit still applies to the bytes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call, CUSTOMER, fetchWithin, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const SCOPES = 'orders:read orders:write webhooks:manage';

/** Malformed UTF-8: a lead byte before ASCII, an encoded surrogate (U+D800), an overlong "/", a stray 0xFF. */
const INVALID: [what: string, bytes: number[]][] = [
  ['0xC3 0x28', [0xc3, 0x28]],
  ['lone surrogate 0xED 0xA0 0x80', [0xed, 0xa0, 0x80]],
  ['overlong 0xC0 0xAF', [0xc0, 0xaf]],
  ['0xFF', [0xff]],
  ['truncated 0xE2 0x82', [0xe2, 0x82]],
];

/** `before` + bytes + `after` as one body. */
function withBytes(before: string, bytes: number[], after: string): Buffer {
  return Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)]);
}

for (const dialect of testDialects()) {
  describe(`JSON bodies are UTF-8 [${dialect}]`, { timeout: 120_000 }, () => {
    let server: TestServer;
    let token: string;
    before(async () => {
      server = await startServer(dialect);
      token = await server.issuer.clientToken(SCOPES);
    });
    after(() => server.close());

    /**
     * Sends exactly these bytes (fetch would not let a string carry invalid UTF-8). fetchWithin's deadline
     * bounds the body too; a body cut off by it fails naming the request and its status.
     */
    async function send(
      method: string,
      path: string,
      body: Buffer,
      contentType = 'application/json',
    ): Promise<CallResult> {
      const response = await fetchWithin(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
        body: new Uint8Array(body),
      });
      const text = await response.text().catch((err: unknown) => {
        throw new Error(`${method} ${path}: answered ${response.status}, but the body did not complete`, {
          cause: err,
        });
      });
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, headers: response.headers, text, json };
    }
    const get = async (path: string): Promise<CallResult> => {
      const res = await call(server.url, 'GET', path, { token });
      expectStatus(res, 200);
      return res;
    };
    const webhook = (description: Buffer) =>
      withBytes('{"Url":"https://example.com/hook","Events":["*"],"Description":"', [...description], '"}');

    test('invalid UTF-8 inside a string is 400 on create and PATCH, and nothing is stored', async () => {
      const existing = await send('POST', '/api/webhooks', webhook(Buffer.from('café ✓ 😀')));
      expectStatus(existing, 201);
      assert.equal(existing.json.Description, 'café ✓ 😀', 'valid multi-byte UTF-8 is kept as sent');
      const endpoint = `/api/webhooks/${existing.json.Id}`;
      for (const [what, bytes] of INVALID) {
        const created = await send('POST', '/api/webhooks', webhook(Buffer.from(bytes)));
        expectProblem(created, 400, 'malformed-body', `webhook create with ${what}`);
        assert.match(created.json.detail, /not valid UTF-8/, created.text);
        const changed = await send('PATCH', endpoint, withBytes('{"Description":"x', bytes, '"}'));
        expectProblem(changed, 400, 'malformed-body', `webhook PATCH with ${what}`);
        const order = await send(
          'POST',
          '/api/orders',
          withBytes(`{"CustomerId":"${CUSTOMER}","Total":1,"Currency":"US`, bytes, '"}'),
        );
        expectProblem(order, 400, 'malformed-body', `order create with ${what}`);
        const name = await send(
          'POST',
          '/api/orders',
          withBytes(`{"CustomerId":"${CUSTOMER}","Total":1,"`, bytes, '":1}'),
        );
        expectProblem(name, 400, 'malformed-body', `order member name with ${what}`);
      }
      const endpoints = (await get('/api/webhooks')).json.Items as { Description: string }[];
      assert.deepEqual(
        endpoints.map((e) => e.Description),
        ['café ✓ 😀'],
        'only the valid endpoint exists, unchanged',
      );
      assert.deepEqual((await get('/api/orders')).json.Items, [], 'no order was created');
      // The size limit still counts bytes (413 above BODY_LIMIT_BYTES), valid UTF-8 or not.
      const padding = (n: number) => `{"CustomerId":"${CUSTOMER}","Total":1,"X":"${'x'.repeat(n)}"}`;
      const limit = 65_536;
      const over = Buffer.from(padding(limit));
      expectProblem(await send('POST', '/api/orders', over), 413, 'payload-too-large');
      expectProblem(
        await send('POST', '/api/orders', withBytes('{"X":"', new Array(limit).fill(0xff), '"}')),
        413,
        'payload-too-large',
      );
      const under = await send('POST', '/api/orders', Buffer.from(padding(limit - 200)));
      expectProblem(under, 422, 'validation-error'); // read and parsed; X is an unknown member
    });

    test('a leading byte order mark is 400 naming it', async () => {
      const body = Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(`{"CustomerId":"${CUSTOMER}","Total":1}`),
      ]);
      const res = await send('POST', '/api/orders', body);
      expectProblem(res, 400, 'malformed-body');
      assert.match(res.json.detail, /byte order mark/, res.text);
    });

    test('a charset other than UTF-8 is 415; utf-8 in any spelling is accepted', async () => {
      const body = Buffer.from(`{"CustomerId":"${CUSTOMER}","Total":1}`);
      for (const contentType of [
        'application/json; charset=iso-8859-1',
        'application/json;charset="latin1"',
        'application/json; charset=utf-16',
        'application/json; foo="a;charset=utf-8"; charset=us-ascii',
      ]) {
        const res = await send('POST', '/api/orders', body, contentType);
        expectProblem(res, 415, 'unsupported-media-type', contentType);
        assert.match(res.json.detail, /UTF-8/, res.text);
      }
      assert.deepEqual((await get('/api/orders')).json.Items, [], 'no order was created');
      for (const contentType of [
        'application/json; charset=utf-8',
        'application/json; charset=UTF-8',
        'application/json;charset="utf-8"',
        'Application/JSON; Charset=utf8',
      ]) {
        expectStatus(await send('POST', '/api/orders', body, contentType), 201, contentType);
      }
      const merge = await send(
        'PATCH',
        '/api/webhooks/whep_0',
        Buffer.from('{}'),
        'application/merge-patch+json; charset=koi8-r',
      );
      expectProblem(merge, 415, 'unsupported-media-type', 'a patch type with another charset');
    });
  });
}
