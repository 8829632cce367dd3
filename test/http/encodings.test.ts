// Accept-Encoding negotiation of the precompressed bodies (src/http/representation/encodings.ts), case by case:
// the cases a general-purpose negotiator gets wrong are the reason this one is ours.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chooseCoding, type Coding } from '../../src/http/representation/encodings.ts';

const ALL: Coding[] = ['br', 'gzip', 'identity'];

const CASES: [string | undefined, Coding][] = [
  [undefined, 'identity'],
  ['', 'identity'],
  ['gzip, br', 'br'],
  ['gzip;q=0.5', 'gzip'],
  // Content codings and the q parameter are case-insensitive (RFC 9110 §8.4.1, §12.4.2).
  ['GZIP', 'gzip'],
  ['gzip;Q=1', 'gzip'],
  ['Br;q=0.4, GZip;q=0.9', 'gzip'],
  // x-gzip is gzip (RFC 9110 §8.4.1.3).
  ['x-gzip', 'gzip'],
  // `*` covers only the codings the header does not name: a coding refused by name stays refused.
  ['br;q=0, *', 'gzip'],
  ['*;q=0, identity', 'identity'],
  ['*', 'br'],
  // Everything refused, identity included: identity anyway rather than a 406 (RFC 9110 §12.5.3 permits it).
  ['identity;q=0', 'identity'],
  ['br;q=0, gzip;q=0', 'identity'],
  ['compress, deflate', 'identity'],
  ['gzip;q=abc', 'identity'],
];

for (const [header, expected] of CASES) {
  test(`Accept-Encoding ${JSON.stringify(header)} gets ${expected}`, () => {
    assert.equal(chooseCoding(header, ALL), expected);
  });
}

test('a coding that has no variant is never chosen', () => {
  assert.equal(chooseCoding('br', ['gzip', 'identity']), 'identity');
  assert.equal(chooseCoding('br, gzip;q=0.1', ['gzip', 'identity']), 'gzip');
});
