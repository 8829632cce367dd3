// A password sent to the admin API is never logged (docs/guides/admin-api.md, Users): the server runs as
// it does in production, a separate process at LOG_LEVEL=debug, and its whole output is searched for
// the passwords sent, on success and on a refused body alike.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startChildServer, type ChildServer } from '../helpers/child-server.ts';
import { createMigratedTestDatabase } from '../helpers/database-template.ts';
import { TEST_WEBHOOK_SECRET_KEY, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { call } from '../helpers/http.ts';
import { dropWithin } from '../helpers/server.ts';

const CREATE_PASSWORD = 'create-password-canary-4711';
const SET_PASSWORD = 'set-password-canary-0815';
const REFUSED_PASSWORD = 'refused-password-canary-1234';

for (const dialect of testDialects()) {
  describe(`admin users API logs no password [${dialect}]`, () => {
    let database: TestDatabase;
    let server: ChildServer;
    before(async () => {
      database = await createMigratedTestDatabase(dialect);
      server = await startChildServer({
        env: { LOG_LEVEL: 'debug', DATABASE_URL: database.url, WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY },
      });
    });
    after(async () => {
      await server.stop();
      await dropWithin(database);
    });

    test('create, set password and a refused body: the passwords appear in no log line and no response', async () => {
      const token = await server.issuer.clientToken('admin:read admin:write', 'automation');
      const created = await call(server.url, 'POST', '/api/admin/users', {
        token,
        body: { Email: `logs-${dialect}@example.test`, Name: 'Logs', Password: CREATE_PASSWORD },
      });
      assert.equal(created.status, 201, created.text);
      const set = await call(server.url, 'PUT', `/api/admin/users/${created.json.Id}/password`, {
        token,
        body: { Password: SET_PASSWORD },
      });
      assert.equal(set.status, 204, set.text);
      const refused = await call(server.url, 'PUT', `/api/admin/users/${created.json.Id}/password`, {
        token,
        body: { Password: REFUSED_PASSWORD, Extra: true },
      });
      assert.equal(refused.status, 422, refused.text);
      const responses = [created.text, set.text, refused.text].join('\n');
      // The request log lines of all three are written before the answers: wait for the last one.
      await server.waitFor(/"statusCode":422/);
      const output = server.output();
      assert.match(output, /"level":20|"level":30/, 'the server logged the requests');
      for (const password of [CREATE_PASSWORD, SET_PASSWORD, REFUSED_PASSWORD]) {
        assert.ok(!output.includes(password), `${password} appears in the log:\n${output}`);
        assert.ok(!responses.includes(password), `${password} appears in a response:\n${responses}`);
      }
    });
  });
}
