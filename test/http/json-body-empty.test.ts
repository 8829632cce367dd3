// An empty body is no body, whatever Content-Type says (RFC 9110 §8.3): many clients send
// `Content-Type: application/json` on every request, so a DELETE or an action POST with that header
// and nothing after it works as without the header, with Content-Length: 0 or with no framing at all
// (RFC 9112 §6.3: no Content-Length and no Transfer-Encoding means no body). A route that needs a body
// refuses the empty one as it refuses a missing one. Raw HTTP, to control exactly what is framed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { rawRequest, type RawResponse } from './raw-http.ts';

const SCOPES = 'orders:read orders:write webhooks:manage';
const JSON_TYPE = 'application/json';

/** The two ways a request says it has no body: Content-Length: 0, or no framing header at all. */
const FRAMINGS: [label: string, headers: string[]][] = [
  ['Content-Length: 0', ['Content-Length: 0']],
  ['no Content-Length', []],
];

for (const dialect of testDialects()) {
  describe(`empty bodies with a JSON Content-Type [${dialect}]`, { timeout: 120_000 }, () => {
    let server: TestServer;
    let token: string;
    let port: number;
    before(async () => {
      server = await startServer(dialect);
      token = await server.issuer.clientToken(SCOPES);
      port = Number(new URL(server.url).port);
    });
    after(() => server.close());

    /** One request with no body, exactly these extra header lines. */
    const bodiless = (method: string, path: string, headers: string[]): Promise<RawResponse> =>
      rawRequest(
        port,
        [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${token}`, ...headers, '', ''].join(
          '\r\n',
        ),
      );
    const newOrder = async (): Promise<string> => {
      const created = await call(server.url, 'POST', '/api/orders', {
        token,
        body: { CustomerId: CUSTOMER, Total: 10 },
      });
      expectStatus(created, 201);
      return `/api/orders/${created.json.Id}`;
    };

    test('DELETE /api/orders/{id} with Content-Type: application/json and no body is 204', async () => {
      for (const [label, framing] of FRAMINGS) {
        for (const contentType of [JSON_TYPE, 'application/json; charset=utf-8']) {
          const path = await newOrder();
          const deleted = await bodiless('DELETE', path, [`Content-Type: ${contentType}`, ...framing]);
          expectStatus(deleted, 204, `${contentType}, ${label}`);
          expectProblem(await call(server.url, 'GET', path, { token }), 404, 'not-found', 'then gone');
        }
      }
    });

    test('the action POSTs with Content-Type: application/json and no body work as without the header', async () => {
      for (const [label, framing] of FRAMINGS) {
        const path = await newOrder();
        const steps: [action: string, status: string][] = [
          ['pay', 'paid'],
          ['ship', 'shipped'],
          ['deliver', 'delivered'],
        ];
        for (const [action, status] of steps) {
          const res = await bodiless('POST', `${path}/${action}`, [`Content-Type: ${JSON_TYPE}`, ...framing]);
          expectStatus(res, 200, `${action}, ${label}`);
          assert.equal(res.json.Status, status, res.body);
        }
        const other = await newOrder();
        const cancelled = await bodiless('POST', `${other}/cancel`, [
          `Content-Type: ${JSON_TYPE}`,
          `Idempotency-Key: empty-cancel-${framing.length}`,
          ...framing,
        ]);
        expectStatus(cancelled, 200, `cancel, ${label}`);
        assert.equal(cancelled.json.Status, 'cancelled', cancelled.body);
        const replayed = await bodiless('POST', `${other}/cancel`, [
          `Idempotency-Key: empty-cancel-${framing.length}`,
          ...framing,
        ]);
        expectStatus(replayed, 200, 'the same request without the header is its replay');
        assert.equal(replayed.headers['idempotent-replayed'], 'true', JSON.stringify(replayed.headers));
      }
    });

    test('the webhook routes without a body (ping, rotate-secret, DELETE) take the header with no body', async () => {
      const created = await call(server.url, 'POST', '/api/webhooks', {
        token,
        body: { Url: 'https://example.com/hook', Events: ['*'] },
      });
      expectStatus(created, 201);
      const endpoint = `/api/webhooks/${created.json.Id}`;
      const header = `Content-Type: ${JSON_TYPE}`;
      expectStatus(await bodiless('POST', `${endpoint}/ping`, [header, 'Content-Length: 0']), 202, 'ping');
      const rotated = await bodiless('POST', `${endpoint}/rotate-secret`, [header, 'Content-Length: 0']);
      expectStatus(rotated, 200, 'rotate-secret');
      assert.match(rotated.json.Secret, /^whsec_/, rotated.body);
      expectStatus(await bodiless('DELETE', endpoint, [header]), 204, 'delete');
    });

    test('POST /api/orders with an empty JSON body is refused as a missing body is: 400, a body is required', async () => {
      const count = async () => (await call(server.url, 'GET', '/api/orders?limit=100', { token })).json.Items.length;
      const before = await count();
      const missing = await bodiless('POST', '/api/orders', ['Content-Length: 0']);
      const missingProblem = expectProblem(missing, 400, 'malformed-body', 'no Content-Type');
      assert.match(String(missingProblem.detail), /body is required/, missing.body);
      for (const [label, framing] of FRAMINGS) {
        const empty = await bodiless('POST', '/api/orders', [`Content-Type: ${JSON_TYPE}`, ...framing]);
        const problem = expectProblem(empty, 400, 'malformed-body', label);
        assert.equal(problem.detail, missingProblem.detail, empty.body);
      }
      assert.equal(await count(), before, 'no order was created');
      const patched = await bodiless('PATCH', await newOrder(), [
        'Content-Type: application/merge-patch+json',
        'Content-Length: 0',
      ]);
      const patchProblem = expectProblem(patched, 400, 'malformed-body', 'an empty merge patch');
      assert.match(String(patchProblem.detail), /body is required/, patched.body);
    });
  });
}
