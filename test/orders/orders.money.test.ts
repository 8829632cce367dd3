import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_TOTAL_EXCLUSIVE,
  fromMinorUnits,
  isActiveCurrency,
  minorUnits,
  toMinorUnits,
} from '../../src/orders/orders.money.ts';

function minorOf(total: number, currency: string): number {
  const result = toMinorUnits(total, currency);
  assert.ok(result.ok, `expected ${total} ${currency} to be accepted`);
  return result.minor;
}

function errorOf(total: number, currency: string): string {
  const result = toMinorUnits(total, currency);
  assert.ok(!result.ok, `expected ${total} ${currency} to be rejected`);
  return result.error;
}

test('minor units follow the ISO 4217 table for 0-, 2-, 3- and 4-digit codes', () => {
  assert.equal(minorUnits('JPY'), 0);
  assert.equal(minorUnits('USD'), 2);
  assert.equal(minorUnits('KWD'), 3);
  assert.equal(minorUnits('CLF'), 4);
  assert.equal(minorUnits('CHE'), 2);
});

test('active codes include 2025-2026 additions and exclude withdrawn or unit-less codes', () => {
  for (const code of ['XCG', 'ZWG', 'SLE', 'VED', 'EUR', 'BOV', 'USN']) assert.ok(isActiveCurrency(code), code);
  for (const code of ['ANG', 'BGN', 'HRK', 'SLL', 'ZWL', 'CUC', 'XAU', 'XDR', 'XTS', 'XXX', 'XBA']) {
    assert.equal(isActiveCurrency(code), false, code);
  }
});

test('currency lookup is case-sensitive because ISO 4217 codes are upper case', () => {
  assert.equal(minorUnits('usd'), undefined);
  assert.equal(isActiveCurrency('Usd'), false);
});

test('USD 19.99 converts to 1999 minor units and back to 19.99', () => {
  assert.equal(minorOf(19.99, 'USD'), 1999);
  assert.equal(fromMinorUnits(1999, 'USD'), 19.99);
});

test('a fractional JPY amount is rejected because JPY has no minor unit', () => {
  assert.equal(errorOf(1.5, 'JPY'), 'too-many-decimals');
  assert.equal(minorOf(1500, 'JPY'), 1500);
});

test('KWD accepts three decimals', () => {
  assert.equal(minorOf(1.234, 'KWD'), 1234);
  assert.equal(fromMinorUnits(1234, 'KWD'), 1.234);
});

test('zero and negative zero are both accepted as zero', () => {
  assert.equal(minorOf(0, 'USD'), 0);
  assert.ok(Object.is(minorOf(-0, 'USD'), 0));
  assert.ok(Object.is(fromMinorUnits(-0, 'USD'), 0));
});

test('negative totals are rejected', () => {
  assert.equal(errorOf(-0.01, 'USD'), 'negative');
});

test('non-finite totals are rejected', () => {
  assert.equal(errorOf(Number.NaN, 'USD'), 'not-finite');
  assert.equal(errorOf(Number.POSITIVE_INFINITY, 'USD'), 'not-finite');
});

test('totals from 10^12 upward are rejected and the largest cent amount below is exact', () => {
  assert.equal(errorOf(MAX_TOTAL_EXCLUSIVE, 'USD'), 'too-large');
  assert.equal(errorOf(1e21, 'USD'), 'too-large');
  assert.equal(minorOf(999999999999.99, 'USD'), 99999999999999);
  assert.equal(fromMinorUnits(99999999999999, 'USD'), 999999999999.99);
});

test('four-decimal units stop at 10^11 so the 15-significant-digit guarantee holds', () => {
  assert.equal(errorOf(1e11, 'CLF'), 'too-large');
  assert.equal(minorOf(99999999999.9999, 'CLF'), 999999999999999);
});

test('float noise such as 0.1 + 0.2 is rejected as too many decimals', () => {
  assert.equal(errorOf(0.1 + 0.2, 'USD'), 'too-many-decimals');
});

test('exponent-form numbers are converted through their decimal value', () => {
  assert.equal(minorOf(JSON.parse('1.5e3') as number, 'USD'), 150000);
  assert.equal(minorOf(JSON.parse('1999E-2') as number, 'USD'), 1999);
  assert.equal(minorOf(1e-2, 'USD'), 1);
  assert.equal(minorOf(1e-3, 'KWD'), 1);
  assert.equal(errorOf(1e-7, 'USD'), 'too-many-decimals');
  assert.equal(errorOf(1.5e-7, 'CLF'), 'too-many-decimals');
  assert.equal(errorOf(5e-324, 'USD'), 'too-many-decimals');
});

test('an unknown currency is a programming error', () => {
  assert.throws(() => toMinorUnits(1, 'XAU'), RangeError);
  assert.throws(() => fromMinorUnits(1, 'usd'), RangeError);
  assert.throws(() => fromMinorUnits(0.5, 'USD'), RangeError);
});

// Deterministic PRNG (mulberry32-style) so a failing case is reproducible.
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomDecimal(next: () => number, intDigits: number, decimals: number): string {
  const digit = (): string => String(Math.floor(next() * 10));
  const whole = Array.from({ length: 1 + Math.floor(next() * intDigits) }, digit).join('');
  const fractionLength = Math.floor(next() * (decimals + 1));
  const fraction = Array.from({ length: fractionLength }, digit).join('');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

test('random decimals within the limits round-trip exactly through minor units', () => {
  const next = prng(0x5161e7);
  const cases: readonly [string, number, number][] = [
    ['JPY', 12, 0],
    ['USD', 12, 2],
    ['KWD', 12, 3],
    ['CLF', 11, 4],
  ];
  for (const [currency, intDigits, decimals] of cases) {
    for (let i = 0; i < 5000; i++) {
      const text = randomDecimal(next, intDigits, decimals);
      const x = Number(text);
      const minor = minorOf(x, currency);
      assert.equal(minor, Number(text.replace('.', '') + '0'.repeat(decimals - (text.split('.')[1]?.length ?? 0))));
      assert.equal(String(fromMinorUnits(minor, currency)), String(x), `${text} ${currency}`);
    }
  }
});
