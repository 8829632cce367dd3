// Exact money handling for an order's `Total` (a JSON number) and `Currency`
// (an ISO 4217 alphabetic code). Amounts are converted to integer minor units
// through their decimal text, never through binary floating-point arithmetic.

// Active ISO 4217 codes (list one, currencies, and list two, funds) grouped by
// their "minor unit" column, as of late 2026. Deliberately absent:
// - codes whose minor unit is "N.A." (precious metals XAU XAG XPD XPT, the
//   supranational units XDR XSU XUA XBA-XBD, and the test/no-currency codes
//   XTS XXX): they cannot express an order total;
// - withdrawn codes (list three): HRK, SLL, ZWL, CUC, ANG (replaced by XCG in
//   2025) and BGN (Bulgaria adopted the euro on 2026-01-01).
const MINOR_UNIT_GROUPS: readonly (readonly [number, string])[] = [
  [0, 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF'],
  [2, 'AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BMD BND BOB BOV BRL BSD BTN BWP BYN BZD'],
  [2, 'CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP'],
  [2, 'GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT'],
  [2, 'LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN'],
  [2, 'NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD'],
  [2, 'SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS'],
  [2, 'VED VES WST XCD XCG YER ZAR ZMW ZWG'],
  [3, 'BHD IQD JOD KWD LYD OMR TND'],
  [4, 'CLF UYW'],
];

const MINOR_UNITS: ReadonlyMap<string, number> = new Map(
  MINOR_UNIT_GROUPS.flatMap(([digits, codes]) => codes.split(' ').map((code) => [code, digits] as const)),
);

// Exact powers of ten for every minor-unit count in the table (all < 2^53).
const POWERS_OF_TEN: readonly number[] = [1, 10, 100, 1_000, 10_000];

/**
 * Totals must be below 10^12. With at most 3 decimals an accepted total then
 * has at most 12 + 3 = 15 significant decimal digits, and every decimal with
 * <= 15 significant digits survives decimal -> IEEE 754 binary64 -> shortest
 * decimal unchanged (DBL_DIG = 15, ISO C 5.2.4.2.2; ECMA-262 Number::toString
 * yields the shortest round-tripping string). So the text the client sent and
 * String(total) denote the same amount, and the conversion below is exact.
 */
export const MAX_TOTAL_EXCLUSIVE = 1_000_000_000_000;

// The 15-digit guarantee only leaves room for 12 integer digits when there are
// <= 3 decimals; 4-decimal units (CLF, UYW) get 11 integer digits instead.
const SIGNIFICANT_DIGITS_EXACT = 15;

/** Minor-unit digits of an active ISO 4217 code; undefined otherwise. Codes are upper case (ISO 4217 §4.2), so lookup is case-sensitive. */
export function minorUnits(currency: string): number | undefined {
  return MINOR_UNITS.get(currency);
}

export function isActiveCurrency(code: string): boolean {
  return MINOR_UNITS.has(code);
}

type TotalError = 'negative' | 'too-many-decimals' | 'too-large' | 'not-finite';

type ToMinorUnitsResult = { ok: true; minor: number } | { ok: false; error: TotalError; detail: string };

function requireDigits(currency: string): number {
  const digits = minorUnits(currency);
  // Callers validate Currency (isActiveCurrency) before touching amounts; an
  // unknown code here is a programming error, not a client error.
  if (digits === undefined) throw new RangeError(`not an active ISO 4217 currency: ${currency}`);
  return digits;
}

function totalLimit(digits: number): number {
  return Math.min(MAX_TOTAL_EXCLUSIVE, 10 ** (SIGNIFICANT_DIGITS_EXACT - digits));
}

// Shortest decimal text of a non-negative finite number as coefficient digits
// and a power-of-ten exponent: "1.5e3" -> { coefficient: "15", exponent: 2 }.
function decompose(text: string): { coefficient: string; exponent: number } {
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(text);
  if (match === null) throw new Error(`unexpected number text: ${text}`);
  const [, whole = '', fraction = '', exp = '0'] = match;
  return { coefficient: whole + fraction, exponent: Number(exp) - fraction.length };
}

function fail(error: TotalError, detail: string): ToMinorUnitsResult {
  return { ok: false, error, detail };
}

/** Converts a JSON-number total to integer minor units exactly, via String(total). */
export function toMinorUnits(total: number, currency: string): ToMinorUnitsResult {
  const digits = requireDigits(currency);
  if (!Number.isFinite(total)) return fail('not-finite', 'Total must be a finite number');
  if (total < 0) return fail('negative', 'Total must not be negative');
  const limit = totalLimit(digits);
  if (total >= limit) return fail('too-large', `Total must be less than ${limit}`);
  // String(-0) is "0", so negative zero normalises to 0 here.
  const { coefficient, exponent } = decompose(String(total));
  const shift = exponent + digits;
  // The shortest form never ends its fraction with 0, so a negative shift
  // always means a non-zero digit below the minor unit.
  if (shift < 0) return fail('too-many-decimals', `${currency} allows at most ${digits} decimal places`);
  const minorText = coefficient + '0'.repeat(shift);
  return { ok: true, minor: Number(minorText) };
}

/**
 * Minor units back to the JSON number. minor (a safe integer) and 10^digits
 * are both exact doubles, and IEEE 754 division is correctly rounded, so the
 * quotient is the double nearest the exact decimal minor / 10^digits, i.e.
 * the same double Number() gives for that decimal text. Hence
 * fromMinorUnits(toMinorUnits(x)) === x for every accepted x.
 */
export function fromMinorUnits(minor: number, currency: string): number {
  const digits = requireDigits(currency);
  if (!Number.isSafeInteger(minor) || minor < 0) {
    throw new RangeError(`minor units must be a non-negative safe integer: ${minor}`);
  }
  const divisor = POWERS_OF_TEN[digits];
  if (divisor === undefined) throw new RangeError(`unsupported minor units: ${digits}`);
  return minor / divisor + 0; // + 0 maps a -0 argument to 0
}
