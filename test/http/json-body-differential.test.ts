// parseJsonBody (src/http/admission/json-body.ts) keeps its own scanner for speed (docs/benchmarks.md); this
// differential test holds it to a maintained parser, lossless-json, on seeded random documents and on
// corruptions of them: the same texts are accepted, the same values come out, and a number lossless-json
// calls unsafe is refused as inexact (422) instead of being rounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isSafeNumber, parse as losslessParse } from 'lossless-json';
import { parseJsonBody } from '../../src/http/admission/json-body.ts';
import { Problem } from '../../src/http/problems/problems.ts';

/** A small seeded generator (mulberry32), so a failure names a reproducible case. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Generated {
  text: string;
  unsafeNumber: boolean;
  duplicateName: boolean;
}

const SAFE_NUMBERS = ['0', '-0', '7', '-42', '19.99', '0.1', '1e3', '2.5E-3', '9007199254740991', '123456789012345'];
const UNSAFE_NUMBERS = [
  '19.999999999999999',
  '12345678901234567890',
  '1e400',
  '0.10000000000000000555',
  '-9.87654321098765432',
];
const STRINGS = [
  '',
  'a',
  'héllo',
  '\\"quoted\\"',
  '\\u00e9\\u20ac',
  'tab\\there',
  '\\ud83d\\ude00',
  'line\\nbreak',
  '/\\/',
];

function generate(next: () => number, depth: number, state: Generated): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const roll = next();
  if (depth > 3 || roll < 0.35) {
    if (roll < 0.05) {
      state.unsafeNumber = true;
      return pick(UNSAFE_NUMBERS);
    }
    return pick([...SAFE_NUMBERS, `"${pick(STRINGS)}"`, 'true', 'false', 'null']);
  }
  const count = Math.floor(next() * 4);
  const space = pick(['', ' ', '\n  ', '\t']);
  if (roll < 0.65) {
    const items = Array.from({ length: count }, () => generate(next, depth + 1, state));
    return `[${space}${items.join(`,${space}`)}${space}]`;
  }
  const names: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const reuse = names.length > 0 && next() < 0.08;
    if (reuse) state.duplicateName = true;
    names.push(reuse ? pick(names) : `${pick(STRINGS)}${i}`);
  }
  const members = names.map((name) => `"${name}"${space}:${space}${generate(next, depth + 1, state)}`);
  return `{${space}${members.join(`,${space}`)}${space}}`;
}

/** lossless-json's value with every number made a JavaScript number, or the error it threw. */
function reference(text: string): { value: unknown } | { error: Error } {
  try {
    return { value: losslessParse(text, undefined, (digits: string) => Number(digits)) };
  } catch (error) {
    return { error: error as Error };
  }
}

function ours(text: string): { value: unknown } | { problem: Problem } {
  try {
    return { value: parseJsonBody(text) };
  } catch (error) {
    if (error instanceof Problem) return { problem: error };
    throw error;
  }
}

test('2,000 random documents: the same values as lossless-json, and unsafe numbers and repeated names refused', () => {
  const next = random(20261128);
  const counts = { accepted: 0, inexact: 0, duplicate: 0 };
  for (let i = 0; i < 2000; i += 1) {
    const state: Generated = { text: '', unsafeNumber: false, duplicateName: false };
    const text = generate(next, 0, state);
    const mine = ours(text);
    const theirs = reference(text);
    const context = `case ${i}: ${text}`;
    if (state.duplicateName) {
      assert.ok('problem' in mine && mine.problem.type.status === 400, `${context} → ${JSON.stringify(mine)}`);
      counts.duplicate += 1;
    } else if (state.unsafeNumber) {
      assert.ok('value' in theirs, `${context}: lossless-json refused a valid text`);
      assert.ok('problem' in mine && mine.problem.type.status === 422, `${context} → ${JSON.stringify(mine)}`);
      counts.inexact += 1;
    } else {
      assert.ok(
        'value' in theirs,
        `${context}: lossless-json refused ${'error' in theirs ? theirs.error.message : ''}`,
      );
      assert.ok('value' in mine, `${context} → ${'problem' in mine ? mine.problem.detail : ''}`);
      assert.deepEqual(mine.value, theirs.value, context);
      counts.accepted += 1;
    }
  }
  // Every class was exercised, so the comparison above says something about each.
  assert.ok(counts.accepted > 500 && counts.inexact > 20 && counts.duplicate > 20, JSON.stringify(counts));
});

test('every number the generator calls safe or unsafe, lossless-json calls the same', () => {
  for (const digits of SAFE_NUMBERS) assert.equal(isSafeNumber(digits), true, digits);
  for (const digits of UNSAFE_NUMBERS) assert.equal(isSafeNumber(digits), false, digits);
});

test('2,000 corruptions of valid documents: accepted by both or refused by both, never a crash', () => {
  const next = random(7);
  let refused = 0;
  for (let i = 0; i < 2000; i += 1) {
    const state: Generated = { text: '', unsafeNumber: false, duplicateName: false };
    const text = generate(next, 0, state);
    if (state.unsafeNumber || state.duplicateName) continue;
    const at = Math.floor(next() * (text.length + 1));
    const noise = ['', '"', ',', '}', ']', '\\', '{', 'x', '\u0001', '-'][Math.floor(next() * 10)]!;
    const corrupted = text.slice(0, at) + noise + text.slice(at + (next() < 0.5 ? 1 : 0));
    const mine = ours(corrupted);
    const theirs = reference(corrupted);
    const context = `case ${i}: ${JSON.stringify(corrupted)}`;
    if ('error' in theirs) {
      refused += 1;
      assert.ok('problem' in mine && mine.problem.type.status === 400, `${context} → ${JSON.stringify(mine)}`);
    } else if ('value' in mine) assert.deepEqual(mine.value, theirs.value, context);
    else assert.fail(`${context}: lossless-json accepted it, we refused: ${mine.problem.detail}`);
  }
  assert.ok(refused > 300, `only ${refused} corruptions were refused: the corruptions are too weak`);
});
