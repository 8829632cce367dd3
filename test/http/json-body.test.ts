// JSON bodies: patch media types only on PATCH, pointers of inexact numbers address the member
// from the document root, nesting is bounded, and problems never echo unbounded client input.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectProblem } from '../helpers/expect.ts';

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

/** The shared problem check, plus the exact media type with its charset. */
const EXACT = { exactMediaType: true } as const;

describe('JSON request bodies', () => {
  let server: TestServer;
  let token: string;
  let orderPath: string;
  before(async () => {
    ({ server, token } = await startWithClientToken('sqlite'));
    const created = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 10 } });
    assert.equal(created.status, 201, created.text);
    orderPath = `/api/orders/${created.json.Id}`;
  });
  after(() => server.close());

  test('POST and PUT refuse the patch media types with 415; PATCH takes them', async () => {
    const order = (await call(server.url, 'GET', orderPath, { token })).json;
    const replacement = { CustomerId: order.CustomerId, Total: 12, Currency: order.Currency };
    for (const contentType of [MERGE, JSON_PATCH, `${MERGE}; charset=utf-8`]) {
      const post = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 1 },
        contentType,
      });
      expectProblem(post, 415, 'unsupported-media-type', EXACT);
      assert.match(post.json.detail, /only accepted by PATCH.*application\/json/);
      const put = await call(server.url, 'PUT', orderPath, { token, body: replacement, contentType });
      expectProblem(put, 415, 'unsupported-media-type', EXACT);
    }
    assert.equal((await call(server.url, 'GET', orderPath, { token })).json.Total, 10, 'nothing was written');
    const merge = await call(server.url, 'PATCH', orderPath, { token, body: { Total: 11 }, contentType: MERGE });
    assert.equal(merge.status, 200, merge.text);
    const patch = await call(server.url, 'PATCH', orderPath, {
      token,
      body: [{ op: 'replace', path: '/Total', value: 10 }],
      contentType: JSON_PATCH,
    });
    assert.equal(patch.status, 200, patch.text);
    const plain = await call(server.url, 'PATCH', orderPath, {
      token,
      body: { Total: 11 },
      contentType: 'application/json',
    });
    expectProblem(plain, 415, 'unsupported-media-type', EXACT);
    assert.equal(plain.headers.get('accept-patch'), `${MERGE}, ${JSON_PATCH}`);
  });

  test('an inexact number is reported at its pointer from the document root', async () => {
    const inPatch = await call(server.url, 'PATCH', orderPath, {
      token,
      rawBody: '[{"op":"replace","path":"/Total","value":0.1234567890123456789}]',
      contentType: JSON_PATCH,
    });
    expectProblem(inPatch, 422, 'validation-error', EXACT);
    assert.deepEqual(
      inPatch.json.errors.map((e: { pointer: string }) => e.pointer),
      ['/0/value'],
    );
    const root = await call(server.url, 'POST', '/api/orders', { token, rawBody: '12345678901234567890' });
    expectProblem(root, 422, 'validation-error', EXACT);
    assert.deepEqual(
      root.json.errors.map((e: { pointer: string }) => e.pointer),
      [''],
    );
    const nested = await call(server.url, 'POST', '/api/orders', {
      token,
      rawBody: `{"CustomerId":"${CUSTOMER}","a/b":{"~":[1,19.999999999999999]}}`,
    });
    assert.deepEqual(
      nested.json.errors.map((e: { pointer: string }) => e.pointer),
      ['/a~1b/~0/1'],
    );
    const member = await call(server.url, 'POST', '/api/orders', {
      token,
      rawBody: `{"CustomerId":"${CUSTOMER}","Total":19.999999999999999}`,
    });
    assert.deepEqual(
      member.json.errors.map((e: { pointer: string }) => e.pointer),
      ['/Total'],
    );
  });

  test('nesting deeper than 64 levels is a 400 naming the limit; 64 levels parse', async () => {
    const deep = await call(server.url, 'POST', '/api/orders', { token, rawBody: '['.repeat(3000) + ']'.repeat(3000) });
    expectProblem(deep, 400, 'malformed-body', EXACT);
    assert.match(deep.json.detail, /more than 64 levels/);
    assert.doesNotMatch(deep.text, /stack|Maximum call/i);
    const nest = (levels: number) =>
      `{"CustomerId":"${CUSTOMER}","Total":1,"X":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
    expectProblem(
      await call(server.url, 'POST', '/api/orders', { token, rawBody: nest(65) }),
      400,
      'malformed-body',
      EXACT,
    );
    const limit = await call(server.url, 'POST', '/api/orders', { token, rawBody: nest(64) });
    expectProblem(limit, 422, 'validation-error', EXACT); // parsed; then X is an unknown member
    const inString = await call(server.url, 'POST', '/api/orders', {
      token,
      rawBody: `{"CustomerId":"${'['.repeat(100)}\\"${'{'.repeat(100)}","Total":1}`,
    });
    expectProblem(inString, 422, 'validation-error', EXACT); // brackets inside strings are not nesting
  });

  test('problems clip echoed member names and numbers', async () => {
    const name = 'N'.repeat(60_000);
    const res = await call(server.url, 'POST', '/api/orders', {
      token,
      rawBody: `{"CustomerId":"${CUSTOMER}","Total":1,"${name}":1}`,
    });
    expectProblem(res, 422, 'validation-error', EXACT);
    assert.ok(res.text.length < 2_000, `problem body is ${res.text.length} characters`);
    assert.equal(res.json.errors[0].pointer, `/${'N'.repeat(99)}…`);
    assert.match(res.json.detail, /\/N+…/);
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`${'M'.repeat(100)}${i}`, 1]));
    const lots = await call(server.url, 'POST', '/api/orders', {
      token,
      body: { CustomerId: CUSTOMER, Total: 1, ...many },
    });
    expectProblem(lots, 422, 'validation-error', EXACT);
    assert.equal(lots.json.errors.length, 500, 'every error is listed');
    assert.ok(lots.json.detail.length < 1_500, `detail is ${lots.json.detail.length} characters`);
    assert.match(lots.json.detail, /and 490 more$/);
    const digits = `1.${'1'.repeat(30_000)}`;
    const number = await call(server.url, 'POST', '/api/orders', {
      token,
      rawBody: `{"CustomerId":"${CUSTOMER}","Total":${digits}}`,
    });
    expectProblem(number, 422, 'validation-error', EXACT);
    assert.ok(number.text.length < 1_000, `problem body is ${number.text.length} characters`);
  });
});
