import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { expectStatus } from '../helpers/expect.ts';

describe('OpenAPI document', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('sqlite');
  });
  after(() => server.close());

  test('is OpenAPI 3.1 generated from the routes, with scopes and the state machine', async () => {
    const res = await call(server.url, 'GET', '/openapi.json');
    expectStatus(res, 200);
    const doc = res.json;
    assert.equal(doc.openapi, '3.1.0');
    for (const path of [
      '/api/orders',
      '/api/orders/{id}',
      '/api/orders/{id}/pay',
      '/api/orders/{id}/cancel',
      '/api/orders/{id}/ship',
      '/api/orders/{id}/deliver',
      '/healthz',
      '/readyz',
    ]) {
      assert.ok(doc.paths[path], `missing ${path}`);
    }
    for (const method of ['get', 'put', 'patch', 'delete'])
      assert.ok(doc.paths['/api/orders/{id}'][method], `missing ${method} /api/orders/{id}`);
    assert.deepEqual(doc.paths['/api/orders'].post.security, [{ bearer: ['orders:write'] }]);
    assert.deepEqual(doc.paths['/api/orders/{id}'].get.security, [{ bearer: ['orders:read'] }]);
    assert.equal(doc.components.securitySchemes.bearer.scheme, 'bearer');
    assert.match(doc.info.description, /pending.*pay.*paid/s);
    const create = doc.paths['/api/orders'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(create.required.sort(), ['CustomerId', 'Total']);
    assert.equal(create.additionalProperties, false);
  });

  test('documents the webhook API, the event list and every outgoing event type with its signature headers', async () => {
    const doc = (await call(server.url, 'GET', '/openapi.json')).json;
    for (const path of [
      '/api/webhooks',
      '/api/webhooks/{id}',
      '/api/webhooks/{id}/ping',
      '/api/webhooks/{id}/rotate-secret',
      '/api/webhooks/{id}/recover',
      '/api/webhooks/{id}/deliveries',
      '/api/webhooks/deliveries/{id}',
      '/api/webhooks/deliveries/{id}/redeliver',
      '/api/events',
      '/api/events/{id}',
    ]) {
      assert.ok(doc.paths[path], `missing ${path}`);
    }
    assert.deepEqual(doc.paths['/api/webhooks'].post.security, [{ bearer: ['webhooks:manage'] }]);
    assert.deepEqual(doc.paths['/api/events'].get.security, [{ bearer: ['events:read'] }]);
    for (const type of [
      'order.created',
      'order.updated',
      'order.paid',
      'order.cancelled',
      'order.shipped',
      'order.delivered',
      'order.deleted',
      'webhook.ping',
      'webhook.endpoint.disabled',
    ]) {
      const post = doc.webhooks[type]?.post;
      assert.ok(post, `missing webhook ${type}`);
      const headers = post.parameters.map((p: { name: string }) => p.name);
      assert.ok(
        headers.includes('X-Service-Signature-256') &&
          headers.includes('X-Service-Delivery') &&
          headers.includes('webhook-signature'),
        type,
      );
      assert.deepEqual(post.requestBody.content['application/json'].schema.required, [
        'Id',
        'Type',
        'OccurredAtUtc',
        'Timestamp',
        'Data',
      ]);
    }
  });

  test('every /api operation documents its errors: 4XX and 5XX as application/problem+json', async () => {
    const doc = (await call(server.url, 'GET', '/openapi.json')).json;
    let operations = 0;
    for (const [path, item] of Object.entries(
      doc.paths as Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, { schema: { required: string[] } }> }> }>
      >,
    )) {
      if (!path.startsWith('/api/')) continue;
      for (const [method, operation] of Object.entries(item)) {
        operations++;
        for (const range of ['4XX', '5XX']) {
          const schema = operation.responses[range]?.content?.['application/problem+json']?.schema;
          assert.ok(schema, `${method.toUpperCase()} ${path} documents ${range}`);
          assert.deepEqual(schema.required, ['type', 'title', 'status', 'detail']);
        }
      }
    }
    assert.ok(operations >= 20, `${operations} operations`);
  });

  test('serves a reference page at /docs without external assets', async () => {
    const res = await call(server.url, 'GET', '/docs/');
    expectStatus(res, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    assert.doesNotMatch(res.text, /src="https?:\/\//);
  });

  test('documents the bodies of /healthz and /readyz, including the 503 that names each check', async () => {
    const doc = (await call(server.url, 'GET', '/openapi.json')).json;
    const live = doc.paths['/healthz'].get.responses['200'].content['application/json'].schema;
    assert.deepEqual(live.required, ['status']);
    const ready = doc.paths['/readyz'].get.responses['200'].content['application/json'].schema;
    assert.deepEqual(ready.required, ['status', 'database', 'checks']);
    assert.deepEqual(ready.properties.checks.properties.redis.enum, ['ok', 'degraded']);
    const notReady = doc.paths['/readyz'].get.responses['503'].content['application/problem+json'].schema;
    assert.deepEqual(notReady.properties.checks.properties.database.enum, ['ok', 'unavailable', 'migrations-pending']);
    assert.deepEqual(notReady.properties.checks.required, ['database']);
  });

  test('the rotate-secret body is optional: the service generates a secret without one', async () => {
    const doc = (await call(server.url, 'GET', '/openapi.json')).json;
    const rotate = doc.paths['/api/webhooks/{id}/rotate-secret'].post.requestBody;
    assert.equal(rotate.required, false);
    assert.equal(doc.paths['/api/webhooks'].post.requestBody.required, true, 'a required body stays required');
  });

  test('documents the protected resource metadata, which 401 responses point to', async () => {
    const doc = (await call(server.url, 'GET', '/openapi.json')).json;
    const metadata = doc.paths['/.well-known/oauth-protected-resource']?.get.responses['200'];
    assert.ok(metadata, 'GET /.well-known/oauth-protected-resource is documented');
    assert.ok(metadata.content['application/json'].schema.required.includes('authorization_servers'));
  });
});
