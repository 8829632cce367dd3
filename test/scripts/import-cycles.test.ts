// scripts/import-cycles.ts, run by `npm run lint`: a cycle of any length is found, a diamond is not a cycle.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findCycles } from '../../scripts/import-cycles.ts';

const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));

test('a two-file and a three-file cycle are both reported, each once', () => {
  const cycles = findCycles(graph({ a: ['b'], b: ['a'], c: ['d'], d: ['e'], e: ['c', 'x'], x: [] }));
  assert.deepEqual(cycles, [
    ['a', 'b'],
    ['c', 'd', 'e'],
  ]);
});

test('a file importing itself is a cycle', () => {
  assert.deepEqual(findCycles(graph({ a: ['a'] })), [['a']]);
});

test('a diamond (two paths to one file) and imports of files outside the graph are not cycles', () => {
  assert.deepEqual(
    findCycles(graph({ top: ['left', 'right', 'node:fs'], left: ['bottom'], right: ['bottom'], bottom: [] })),
    [],
  );
});
