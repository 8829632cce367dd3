// End-user tokens from an issuer whose subjects are not UUIDs (AUTH_ISSUER can be any OIDC provider,
// and `sub` is only "a locally unique string", OIDC Core §2): such a user owns no order, since every
// CustomerId is a UUID, and is answered like any user with none, never with a database error.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call, CUSTOMER } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

for (const dialect of testDialects()) {
  describe(`end users whose subject is not a UUID [${dialect}]`, () => {
    let server: TestServer;
    let orderPath: string;
    let alice: string;

    before(async () => {
      server = await startServer(dialect);
      const client = await server.issuer.clientToken('orders:read orders:write');
      const created = await call(server.url, 'POST', '/api/orders', {
        token: client,
        body: { CustomerId: CUSTOMER, Total: 3 },
      });
      expectStatus(created, 201);
      orderPath = `/api/orders/${created.json.Id}`;
      alice = await server.issuer.userToken('orders:read orders:write', 'alice@partner-idp');
    });
    after(() => server.close());

    test('list their orders: 200 with none', async () => {
      const list = await call(server.url, 'GET', '/api/orders', { token: alice });
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.json.Items, []);
    });

    test('read or create someone else’s order: 404 and 403, as for any other user', async () => {
      expectStatus(await call(server.url, 'GET', orderPath, { token: alice }), 404);
      expectStatus(
        await call(server.url, 'POST', '/api/orders', { token: alice, body: { CustomerId: CUSTOMER, Total: 1 } }),
        403,
      );
    });
  });
}
