// randomHex (src/webhooks/outbox/random-hex.ts): random bytes for ids taken from a pool refilled 4 KB at a
// time; across refills no value repeats and every value has the asked length in lower-case hex.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomHex } from '../../src/webhooks/outbox/random-hex.ts';

test('values across several pool refills are distinct, of the asked length, lower-case hex', () => {
  const seen = new Set<string>();
  // 10 000 × 10 bytes is ~24 refills of the 4 KB pool, with values straddling no boundary twice.
  for (let i = 0; i < 10_000; i++) {
    const hex = randomHex(i % 7 === 0 ? 16 : 10);
    assert.match(hex, i % 7 === 0 ? /^[0-9a-f]{32}$/ : /^[0-9a-f]{20}$/);
    assert.ok(!seen.has(hex), `value ${hex} came out twice (after ${i} values)`);
    seen.add(hex);
  }
});

test('consecutive values never share their bytes (no offset handed out twice)', () => {
  // If the offset advanced by less than a value's length, the next value would begin with the end of
  // this one. Overlaps of 4 bytes or more are checked (a chance match of 4 random bytes is 2^-32).
  for (let i = 0; i < 1000; i++) {
    const first = randomHex(32);
    const second = randomHex(32);
    for (let shared = 4; shared <= 32; shared++)
      assert.notEqual(first.slice(-2 * shared), second.slice(0, 2 * shared), `${first} then ${second}`);
  }
});

test('a count larger than the pool, or not a positive whole number, is refused rather than given repeating bytes', () => {
  assert.throws(() => randomHex(4097), RangeError);
  // A negative or fractional count would move the offset back and hand bytes out twice.
  for (const bytes of [0, -8, 2.5, Number.NaN]) assert.throws(() => randomHex(bytes), RangeError, String(bytes));
  assert.match(randomHex(4096), /^[0-9a-f]{8192}$/);
});
