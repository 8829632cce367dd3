import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  PATCH_MEDIA_TYPES,
  applyJsonPatch,
  applyMergePatch,
  patchMediaType,
  patchSetsMember,
} from '../../src/orders/orders.patch-documents.ts';
import type { PatchResult } from '../../src/orders/orders.patch-documents.ts';

function order(): Record<string, unknown> {
  return {
    Id: 'o1',
    Status: 'open',
    Total: 19.99,
    Shipping: { City: 'Oslo', Zip: '0150' },
    Lines: [{ Sku: 'a' }, { Sku: 'b' }],
  };
}

function documentOf(result: PatchResult): Record<string, unknown> {
  assert.ok(result.ok, `expected success, got ${JSON.stringify(result)}`);
  return result.document;
}

function failureOf(result: PatchResult): { kind: string; pointer?: string } {
  assert.ok(!result.ok, 'expected failure');
  return result.pointer === undefined ? { kind: result.kind } : { kind: result.kind, pointer: result.pointer };
}

test('patch media types are recognised ignoring case and parameters', () => {
  assert.deepEqual(PATCH_MEDIA_TYPES, ['application/merge-patch+json', 'application/json-patch+json']);
  assert.equal(patchMediaType('Application/Merge-Patch+JSON; charset=utf-8'), 'application/merge-patch+json');
  assert.equal(patchMediaType(' application/json-patch+json '), 'application/json-patch+json');
  assert.equal(patchMediaType('application/json'), null);
  assert.equal(patchMediaType(undefined), null);
});

test('merge patch null deletes a member and other members replace values', () => {
  const result = documentOf(applyMergePatch(order(), { Status: 'paid', Total: null }));
  assert.equal(result['Status'], 'paid');
  assert.equal('Total' in result, false);
});

test('merge patch merges nested objects recursively and replaces arrays whole', () => {
  const result = documentOf(
    applyMergePatch(order(), { Shipping: { Zip: null, Country: 'NO' }, Lines: [{ Sku: 'c' }] }),
  );
  assert.deepEqual(result['Shipping'], { City: 'Oslo', Country: 'NO' });
  assert.deepEqual(result['Lines'], [{ Sku: 'c' }]);
});

test('merge patch never mutates the target or aliases the patch', () => {
  const target = order();
  const patch = { Shipping: { City: 'Bergen' }, Notes: { Gift: true } };
  const result = documentOf(applyMergePatch(target, patch));
  assert.deepEqual(target, order());
  assert.notEqual(result['Notes'], patch.Notes);
});

test('a merge patch that is not an object is an invalid patch for an order', () => {
  assert.equal(failureOf(applyMergePatch(order(), [1])).kind, 'invalid-patch');
  assert.equal(failureOf(applyMergePatch(order(), 'x')).kind, 'invalid-patch');
  assert.equal(failureOf(applyMergePatch(order(), null)).kind, 'invalid-patch');
});

test('merge patch rejects prototype-polluting member names at any depth', () => {
  const patch = JSON.parse('{"Shipping":{"__proto__":{"polluted":true}}}') as unknown;
  assert.deepEqual(failureOf(applyMergePatch(order(), patch)), {
    kind: 'invalid-patch',
    pointer: '/Shipping/__proto__',
  });
  assert.equal(failureOf(applyMergePatch(order(), { constructor: { prototype: { x: 1 } } })).kind, 'invalid-patch');
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
});

test('json patch applies a sequence of operations', () => {
  const result = documentOf(
    applyJsonPatch(order(), [
      { op: 'test', path: '/Status', value: 'open' },
      { op: 'replace', path: '/Status', value: 'paid' },
      { op: 'add', path: '/Lines/-', value: { Sku: 'c' } },
      { op: 'move', from: '/Shipping/Zip', path: '/Zip' },
      { op: 'copy', from: '/Id', path: '/Reference' },
      { op: 'remove', path: '/Total' },
    ]),
  );
  assert.deepEqual(result, {
    Id: 'o1',
    Status: 'paid',
    Shipping: { City: 'Oslo' },
    Lines: [{ Sku: 'a' }, { Sku: 'b' }, { Sku: 'c' }],
    Zip: '0150',
    Reference: 'o1',
  });
});

test('json patch is atomic: a failing second operation leaves the target unchanged', () => {
  const target = order();
  const result = applyJsonPatch(target, [
    { op: 'replace', path: '/Status', value: 'paid' },
    { op: 'remove', path: '/Missing' },
  ]);
  assert.deepEqual(failureOf(result), { kind: 'conflict', pointer: '/1' });
  assert.deepEqual(target, order());
});

test('a failed test operation maps to test-failed with the operation pointer', () => {
  const result = applyJsonPatch(order(), [
    { op: 'add', path: '/X', value: 1 },
    { op: 'test', path: '/Status', value: 'paid' },
  ]);
  assert.deepEqual(failureOf(result), { kind: 'test-failed', pointer: '/1' });
});

test('paths that do not exist in the document map to conflict', () => {
  const cases: unknown[] = [
    { op: 'remove', path: '/Nope' }, // OPERATION_PATH_UNRESOLVABLE
    { op: 'replace', path: '/Lines/9', value: 1 }, // OPERATION_PATH_UNRESOLVABLE
    { op: 'move', from: '/Nope', path: '/X' }, // OPERATION_FROM_UNRESOLVABLE
    { op: 'copy', from: '/Lines/9', path: '/X' }, // OPERATION_FROM_UNRESOLVABLE
    { op: 'add', path: '/Nope/X', value: 1 }, // OPERATION_PATH_CANNOT_ADD
    { op: 'add', path: '/Lines/5', value: 1 }, // OPERATION_VALUE_OUT_OF_BOUNDS
    { op: 'add', path: '/Lines/first', value: 1 }, // OPERATION_PATH_ILLEGAL_ARRAY_INDEX
    { op: 'add', path: '/Status/x', value: 1 }, // OPERATION_PATH_UNRESOLVABLE (walks into a string)
  ];
  const first = { op: 'add', path: '/Note', value: 'ok' };
  for (const operation of cases) {
    const failure = failureOf(applyJsonPatch(order(), [first, operation]));
    assert.deepEqual(failure, { kind: 'conflict', pointer: '/1' }, JSON.stringify(operation));
  }
});

test('a root move from a missing location is a conflict', () => {
  assert.equal(failureOf(applyJsonPatch(order(), [{ op: 'move', from: '/Nope', path: '' }])).kind, 'conflict');
});

test('malformed patch documents map to invalid-patch', () => {
  const cases: unknown[] = [
    { op: 'add', path: '/X', value: 1 }, // SEQUENCE_NOT_AN_ARRAY
    ['not an operation'], // OPERATION_NOT_AN_OBJECT
    [{ op: 'merge', path: '/X' }], // OPERATION_OP_INVALID
    [{ op: '_get', path: '/Id' }], // library-internal op, not RFC 6902
    [{ op: 'add', path: 'X', value: 1 }], // OPERATION_PATH_INVALID
    [{ op: 'add', value: 1 }], // OPERATION_PATH_INVALID (missing)
    [{ op: 'copy', path: '/X' }], // OPERATION_FROM_REQUIRED
    [{ op: 'add', path: '/X' }], // OPERATION_VALUE_REQUIRED
    [{ op: 'add', path: '/X', value: { a: undefined } }], // OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED
    [{ op: 'move', from: '/Shipping', path: '/Shipping/Inner' }], // RFC 6902 §4.4
    [{ op: 'replace', path: '', value: [] }], // result is no longer an object
  ];
  for (const operations of cases) {
    assert.equal(failureOf(applyJsonPatch(order(), operations)).kind, 'invalid-patch', JSON.stringify(operations));
  }
});

test('json patch rejects prototype-polluting paths, froms and values', () => {
  const cases: unknown[] = [
    [{ op: 'add', path: '/__proto__/polluted', value: true }],
    [{ op: 'add', path: '/constructor/prototype/polluted', value: true }],
    [{ op: 'add', path: '/Shipping/constructor', value: 1 }],
    [{ op: 'copy', from: '/__proto__', path: '/X' }],
    [{ op: 'add', path: '/X', value: JSON.parse('{"__proto__":{"polluted":true}}') as unknown }],
  ];
  for (const operations of cases) {
    assert.deepEqual(failureOf(applyJsonPatch(order(), operations)), { kind: 'invalid-patch', pointer: '/0' });
  }
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
});

test('json patch results do not alias the request body', () => {
  const value = { Sku: 'c' };
  const result = documentOf(applyJsonPatch(order(), [{ op: 'add', path: '/Extra', value }]));
  assert.notEqual(result['Extra'], value);
  assert.deepEqual(result['Extra'], value);
});

test('patchSetsMember: a merge patch sets a member it names with a value, not one it removes with null', () => {
  const merge = 'application/merge-patch+json';
  assert.equal(patchSetsMember(merge, { Status: 'paid' }, 'Status'), true);
  assert.equal(patchSetsMember(merge, { Status: 'open', Total: 1 }, 'Status'), true, 'even its current value');
  assert.equal(patchSetsMember(merge, { Total: 1 }, 'Status'), false);
  assert.equal(patchSetsMember(merge, { Status: null }, 'Status'), false);
  assert.equal(patchSetsMember(merge, { Shipping: { Status: 'x' } }, 'Status'), false, 'only the top level');
  assert.equal(patchSetsMember(merge, ['Status'], 'Status'), false);
});

test('patchSetsMember: a JSON Patch sets a member by add, replace, copy or move to it, or by replacing the document', () => {
  const json = 'application/json-patch+json';
  for (const op of [
    { op: 'replace', path: '/Status', value: 'open' },
    { op: 'add', path: '/Status', value: 'paid' },
    { op: 'copy', from: '/Id', path: '/Status' },
    { op: 'move', from: '/Id', path: '/Status' },
    { op: 'replace', path: '', value: { Status: 'paid' } },
  ]) {
    assert.equal(patchSetsMember(json, [{ op: 'test', path: '/Total', value: 19.99 }, op], 'Status'), true, op.op);
  }
  for (const op of [
    { op: 'test', path: '/Status', value: 'open' },
    { op: 'remove', path: '/Status' },
    { op: 'replace', path: '/Total', value: 1 },
    { op: 'replace', path: '/Shipping/Status', value: 'x' },
    { op: 'move', from: '/Status', path: '/Other' },
  ]) {
    assert.equal(patchSetsMember(json, [op], 'Status'), false, `${op.op} ${op.path}`);
  }
  assert.equal(patchSetsMember(json, { Status: 'paid' }, 'Status'), false, 'not a JSON Patch document');
});
