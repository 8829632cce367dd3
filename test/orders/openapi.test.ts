// The orders part of /openapi.json says what the routes accept: PATCH's real media types, the request
// headers each route reads, and the schemas clients generate code from.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema?: Record<string, unknown>;
}

const STATUSES = ['pending', 'paid', 'cancelled', 'shipped', 'delivered'];

describe('orders in the OpenAPI document', () => {
  let server: TestServer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let doc: any;
  before(async () => {
    server = await startServer('sqlite');
    doc = (await call(server.url, 'GET', '/openapi.json')).json;
  });
  after(() => server.close());

  const headersOf = (path: string, method: string): string[] =>
    ((doc.paths[path][method].parameters ?? []) as Parameter[])
      .filter((p) => p.in === 'header')
      .map((p) => p.name)
      .sort();

  test('PATCH lists the two patch media types with their own schemas, not application/json', () => {
    const content = doc.paths['/api/orders/{id}'].patch.requestBody.content;
    assert.deepEqual(Object.keys(content).sort(), ['application/json-patch+json', 'application/merge-patch+json']);
    const merge = content['application/merge-patch+json'].schema;
    assert.equal(merge.type, 'object');
    assert.deepEqual(Object.keys(merge.properties).sort(), ['Currency', 'CustomerId', 'Status', 'Total']);
    const jsonPatch = content['application/json-patch+json'].schema;
    assert.equal(jsonPatch.type, 'array');
    assert.deepEqual(jsonPatch.items.properties.op.enum, ['add', 'remove', 'replace', 'move', 'copy', 'test']);
    assert.deepEqual(jsonPatch.items.required.sort(), ['op', 'path']);
  });

  test('declares the request headers each order route reads', () => {
    const conditions = ['If-Match', 'If-None-Match', 'If-Unmodified-Since'];
    const expected: [string, string, string[]][] = [
      ['/api/orders', 'post', ['Idempotency-Key']],
      ['/api/orders/{id}', 'get', [...conditions, 'If-Modified-Since']],
      ['/api/orders/{id}', 'put', [...conditions, 'Prefer']],
      ['/api/orders/{id}', 'patch', [...conditions, 'Prefer']],
      ['/api/orders/{id}', 'delete', conditions],
      ...['pay', 'cancel', 'ship', 'deliver'].map((action): [string, string, string[]] => [
        `/api/orders/{id}/${action}`,
        'post',
        [...conditions, 'Idempotency-Key'],
      ]),
    ];
    for (const [path, method, headers] of expected)
      assert.deepEqual(headersOf(path, method), headers.sort(), `${method} ${path}`);
    const key = (doc.paths['/api/orders'].post.parameters as Parameter[]).find((p) => p.name === 'Idempotency-Key');
    assert.equal(key?.required, false, 'every header is optional');
    assert.equal(key?.schema?.type, 'string');
  });

  test('Status is a string enum, CustomerId an exact UUID pattern, and only create defaults Currency', () => {
    const status = (doc.paths['/api/orders'].get.parameters as Parameter[]).find((p) => p.name === 'Status')?.schema;
    assert.equal(status?.type, 'string');
    assert.deepEqual(status?.enum, STATUSES);
    assert.equal(status?.anyOf, undefined);
    const create = doc.paths['/api/orders'].post.requestBody.content['application/json'].schema;
    assert.equal(create.properties.Currency.default, 'USD');
    assert.equal(create.properties.CustomerId.format, undefined, "not ajv's uuid format, which takes urn:uuid:");
    assert.match('3f2504e0-4f89-41d3-9a0c-0305e82c3301', new RegExp(create.properties.CustomerId.pattern));
    assert.doesNotMatch(
      'urn:uuid:3f2504e0-4f89-41d3-9a0c-0305e82c3301',
      new RegExp(create.properties.CustomerId.pattern),
    );
    const replace = doc.paths['/api/orders/{id}'].put.requestBody.content['application/json'].schema;
    assert.ok(replace.required.includes('Currency'));
    assert.equal(replace.properties.Currency.default, undefined);
    assert.deepEqual(replace.properties.Status.enum, STATUSES);
    assert.equal(replace.properties.UpdatedAtUtc.type, undefined, 'UpdatedAtUtc is ignored, whatever it is');
  });

  const responsesOf = (path: string, method: string): string[] => Object.keys(doc.paths[path][method].responses);

  test('GET of an order documents 304, and PUT and PATCH the 204 of Prefer: return=minimal, without a body', () => {
    const read = doc.paths['/api/orders/{id}'].get.responses;
    assert.ok(read['304'], `GET documents 304: ${responsesOf('/api/orders/{id}', 'get')}`);
    assert.equal(read['304'].content, undefined, '304 has no body');
    for (const method of ['put', 'patch']) {
      const minimal = doc.paths['/api/orders/{id}'][method].responses['204'];
      assert.ok(minimal, `${method} documents 204: ${responsesOf('/api/orders/{id}', method)}`);
      assert.equal(minimal.content, undefined, `${method} 204 has no body`);
      assert.match(minimal.description, /return=minimal/);
    }
  });

  test('limit is optional on the list operations: it has a default', () => {
    for (const path of ['/api/orders', '/api/events', '/api/webhooks/{id}/deliveries']) {
      const limit = (doc.paths[path].get.parameters as Parameter[]).find((p) => p.name === 'limit');
      assert.equal(limit?.required, false, `${path} limit`);
      assert.equal(typeof limit?.schema?.default, 'number', `${path} limit default`);
    }
  });

  test('lists the statuses concurrent writes and bad input get: 400 everywhere, 409 on PATCH, 412 on conditional writes', () => {
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      if (!path.startsWith('/api/orders')) continue;
      for (const method of Object.keys(item))
        assert.ok(responsesOf(path, method).includes('400'), `${method} ${path} documents 400`);
    }
    assert.ok(responsesOf('/api/orders/{id}', 'patch').includes('409'));
    const conflict = doc.paths['/api/orders/{id}'].patch.responses['409'].content['application/problem+json'].schema;
    assert.deepEqual(conflict.properties.currentStatus.enum, STATUSES);
    const conditionalWrites: [string, string][] = [
      ['/api/orders/{id}', 'put'],
      ['/api/orders/{id}', 'patch'],
      ['/api/orders/{id}', 'delete'],
      ...['pay', 'cancel', 'ship', 'deliver'].map((a): [string, string] => [`/api/orders/{id}/${a}`, 'post']),
    ];
    for (const [path, method] of conditionalWrites)
      assert.ok(responsesOf(path, method).includes('412'), `${method} ${path} documents 412`);
  });
});
