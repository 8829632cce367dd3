// The guides (docs/guides/*.md) name API routes by hand, in tables and prose; the reference is the OpenAPI
// document the server generates (docs/reference/http-api.md). Every `METHOD /api/…` the README and docs/
// name must be an operation of /openapi.json, so a renamed or removed route fails here instead of
// leaving a guide that describes a route no server has.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { call } from '../helpers/http.ts';

const ROOT = new URL('../../', import.meta.url);
const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'] as const;

/** README.md and every Markdown file under docs/, as [path, text]. */
function documentation(): [string, string][] {
  const files = readdirSync(new URL('docs/', ROOT), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', ...files].map((f) => [f, readFileSync(new URL(f, ROOT), 'utf8')]);
}

/** `/api/orders/{id}` and `/api/orders/{orderId}` are one route: parameter names do not count. */
function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path.replace(/\{[^}]*\}/g, '{}').replace(/\/$/, '')}`;
}

/** Every `METHOD /api/…` (or `GET/POST /api/…`) written in backticks, with the file that names it. */
function documentedRoutes(): { file: string; key: string }[] {
  const found: { file: string; key: string }[] = [];
  for (const [file, text] of documentation())
    for (const [, methods, path] of text.matchAll(
      /`((?:GET|HEAD|POST|PUT|PATCH|DELETE)(?:\/[A-Z]+)*) (\/api\/[^`\s?]*)/g,
    )) {
      if (path!.includes('…')) continue;
      for (const method of methods!.split('/')) found.push({ file, key: routeKey(method, path!) });
    }
  return found;
}

describe('the routes the docs name exist', () => {
  let server: AuthTestServer;
  let operations: Set<string>;
  before(async () => {
    server = await startAuthServer('sqlite');
    const document = (await call(server.url, 'GET', '/openapi.json')).json as {
      paths: Record<string, Record<string, unknown>>;
    };
    operations = new Set(
      Object.entries(document.paths).flatMap(([path, item]) =>
        METHODS.filter((m) => item[m] !== undefined).map((m) => routeKey(m, path)),
      ),
    );
  });
  after(() => server.close());

  test('every `METHOD /api/…` of README.md and docs/ is an operation of /openapi.json', () => {
    const routes = documentedRoutes();
    assert.ok(routes.length > 50, `only ${routes.length} routes found in the docs: is the pattern still right?`);
    const unknown = routes.filter((r) => !operations.has(r.key)).map((r) => `${r.file}: ${r.key}`);
    assert.deepEqual(unknown, [], 'the docs name routes that /openapi.json does not have');
  });
});
