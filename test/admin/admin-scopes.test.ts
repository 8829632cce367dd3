// Every admin route refuses a caller without its admin scope (docs/security.md, "Roles"): 401
// without a token, 403 with a token that lacks it. The routes are read from /openapi.json, so a route
// added later is covered without touching this test; each operation states its scope there.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testDialects } from '../helpers/databases.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const EVERY_OTHER_SCOPE = 'orders:read orders:write webhooks:manage events:read openid profile email';

interface AdminOperation {
  method: string;
  path: string;
  scope: string;
}

function adminOperations(document: { paths: Record<string, Record<string, unknown>> }): AdminOperation[] {
  const operations: AdminOperation[] = [];
  for (const [template, item] of Object.entries(document.paths)) {
    if (!template.startsWith('/api/admin')) continue;
    for (const method of METHODS) {
      const operation = item[method] as { security?: { bearer?: string[] }[] } | undefined;
      if (!operation) continue;
      const scope = operation.security?.[0]?.bearer?.[0] ?? '';
      // Any value for a path parameter: the scope is checked before parameters are validated.
      const path = template.replace(/\{[^}]+\}/g, 'x0');
      operations.push({ method: method.toUpperCase(), path, scope });
    }
  }
  return operations;
}

for (const dialect of testDialects()) {
  describe(`admin routes require their admin scope [${dialect}]`, () => {
    let server: TestServer;
    let operations: AdminOperation[];
    before(async () => {
      server = await startServer(dialect);
      const document = await call(server.url, 'GET', '/openapi.json');
      operations = adminOperations(document.json);
    });
    after(() => server.close());

    test('every admin operation in the document states admin:read or admin:write', () => {
      assert.ok(operations.length > 0, 'the document lists admin operations');
      for (const op of operations)
        assert.match(op.scope, /^admin:(read|write)$/, `${op.method} ${op.path} requires ${op.scope || 'no scope'}`);
    });

    test('without a token: 401; with every scope but the admin ones: 403', async () => {
      const outsider = await server.issuer.userToken(EVERY_OTHER_SCOPE);
      const machine = await server.issuer.clientToken(EVERY_OTHER_SCOPE);
      for (const op of operations) {
        const body = op.method === 'GET' || op.method === 'DELETE' ? undefined : {};
        const anonymous = await call(server.url, op.method, op.path, { body });
        assert.equal(anonymous.status, 401, `${op.method} ${op.path}: ${anonymous.text}`);
        for (const token of [outsider, machine]) {
          const refused = await call(server.url, op.method, op.path, { token, body });
          assert.equal(refused.status, 403, `${op.method} ${op.path}: ${refused.text}`);
          assert.equal(refused.json.status, 403, refused.text);
        }
      }
    });

    test('admin:read does not open a write route, and admin:write does not open a read route', async () => {
      const reader = await server.issuer.userToken('admin:read');
      const writer = await server.issuer.userToken('admin:write');
      for (const op of operations) {
        const body = op.method === 'GET' || op.method === 'DELETE' ? undefined : {};
        const token = op.scope === 'admin:write' ? reader : writer;
        const refused = await call(server.url, op.method, op.path, { token, body });
        assert.equal(refused.status, 403, `${op.method} ${op.path} (${op.scope}): ${refused.text}`);
      }
    });
  });
}
