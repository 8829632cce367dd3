import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  evaluatePreconditions,
  formatHttpDate,
  parseEntityTagList,
  parseHttpDate,
} from '../../src/http/representation/conditional.ts';
import type { Validators } from '../../src/http/representation/conditional.ts';

// Stored to the millisecond, as orders are; the HTTP-dates below have whole seconds (RFC 9110 §5.6.7).
const LAST_MODIFIED = new Date('2026-03-01T12:00:00.750Z');
const current: Validators = { etag: '"o12-v3-ab12"', lastModified: LAST_MODIFIED };
const BEFORE = 'Sun, 01 Mar 2026 11:59:59 GMT';
/** The resource's own Last-Modified: its second, the 750 ms cut off. */
const SAME_SECOND = 'Sun, 01 Mar 2026 12:00:00 GMT';
const AFTER = 'Sun, 01 Mar 2026 12:00:01 GMT';
/** A resource stored on a whole second, which its Last-Modified states exactly. */
const onTheSecond: Validators = { etag: '"o12-v3-ab12"', lastModified: new Date('2026-03-01T12:00:00.000Z') };

describe('parseEntityTagList', () => {
  it('recognises the wildcard with surrounding whitespace', () => {
    assert.deepEqual(parseEntityTagList('  * '), { any: true });
  });

  it('parses strong and weak tags in a list with loose whitespace and empty elements', () => {
    assert.deepEqual(parseEntityTagList(' "a" ,W/"b",, \t"c"  ,'), {
      any: false,
      tags: [
        { tag: '"a"', weak: false },
        { tag: '"b"', weak: true },
        { tag: '"c"', weak: false },
      ],
    });
  });

  it('keeps commas that are part of an opaque-tag', () => {
    assert.deepEqual(parseEntityTagList('"a,b", "c"'), {
      any: false,
      tags: [
        { tag: '"a,b"', weak: false },
        { tag: '"c"', weak: false },
      ],
    });
  });

  it('accepts the empty opaque-tag', () => {
    assert.deepEqual(parseEntityTagList('""'), { any: false, tags: [{ tag: '""', weak: false }] });
  });

  it('rejects unquoted, half-quoted, lowercase-w and wildcard-mixed values', () => {
    for (const bad of ['abc', '"abc', 'w/"abc"', '"a" "b"', '"a", *', '*, *', 'W/ "a"', '"a b"', '"a"x']) {
      assert.equal(parseEntityTagList(bad), null, bad);
    }
  });
});

describe('HTTP-date', () => {
  const expected = new Date('1994-11-06T08:49:37Z');

  it('formats as IMF-fixdate', () => {
    assert.equal(formatHttpDate(expected), 'Sun, 06 Nov 1994 08:49:37 GMT');
  });

  it('truncates milliseconds: the date is never later than the time it stands for', () => {
    assert.equal(formatHttpDate(new Date('1994-11-06T08:49:37.999Z')), 'Sun, 06 Nov 1994 08:49:37 GMT');
  });

  it('refuses to format an invalid Date', () => {
    assert.throws(() => formatHttpDate(new Date(NaN)), RangeError);
  });

  it('parses IMF-fixdate, RFC 850 and asctime forms to the same instant', () => {
    assert.deepEqual(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), expected);
    assert.deepEqual(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), expected);
    assert.deepEqual(parseHttpDate('Sun Nov  6 08:49:37 1994'), expected);
  });

  it('reads an RFC 850 two-digit year as the near future rather than a century back', () => {
    const nextYear = (new Date().getUTCFullYear() + 1) % 100;
    const yy = String(nextYear).padStart(2, '0');
    const parsed = parseHttpDate(`Monday, 01-Jan-${yy} 00:00:00 GMT`);
    assert.equal(parsed?.getUTCFullYear(), new Date().getUTCFullYear() + 1);
  });

  it('returns null for garbage, impossible dates, wrong zones and lists of dates', () => {
    for (const bad of [
      '',
      'yesterday',
      '1994-11-06T08:49:37Z',
      'Sun, 31 Feb 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 24:00:00 GMT',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'Sun, 06 Nov 1994 08:49:37 +0000',
      'sun, 06 Nov 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT',
    ]) {
      assert.equal(parseHttpDate(bad), null, bad);
    }
  });
});

describe('evaluatePreconditions: If-Match (RFC 9110 §13.1.1)', () => {
  it('proceeds when a listed strong tag equals the current tag', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-match': '"x", "o12-v3-ab12"' }, current), 'proceed');
  });

  it('fails when no listed tag matches', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-match': '"x", "y"' }, current), 'precondition-failed');
  });

  it('fails on a weak tag because If-Match uses strong comparison', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-match': 'W/"o12-v3-ab12"' }, current), 'precondition-failed');
  });

  it('combines multiple field lines into one list', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-match': ['"x"', '"o12-v3-ab12"'] }, current), 'proceed');
  });

  it('proceeds on * when the resource exists and fails when it does not', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-match': '*' }, current), 'proceed');
    assert.equal(evaluatePreconditions('PUT', { 'if-match': '*' }, null), 'precondition-failed');
  });

  it('fails a listed tag when the resource does not exist', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-match': '"o12-v3-ab12"' }, null), 'precondition-failed');
  });

  it('fails on a malformed value so a conditional write never proceeds unconditionally', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-match': 'o12-v3-ab12' }, current), 'precondition-failed');
  });

  it('lets matchesCurrent accept another variant of the same version', () => {
    const variants: Validators = { ...current, matchesCurrent: (tag) => tag.startsWith('"o12-v3-') };
    assert.equal(evaluatePreconditions('PATCH', { 'if-match': '"o12-v3-zz99"' }, variants), 'proceed');
    assert.equal(evaluatePreconditions('PATCH', { 'if-match': '"o12-v2-ab12"' }, variants), 'precondition-failed');
  });

  it('never hands weak tags to matchesCurrent', () => {
    const variants: Validators = { ...current, matchesCurrent: () => true };
    assert.equal(evaluatePreconditions('PATCH', { 'if-match': 'W/"o12-v3-ab12"' }, variants), 'precondition-failed');
  });

  it('never matches a weak current tag under strong comparison', () => {
    const weakCurrent: Validators = { etag: 'W/"o12"' };
    assert.equal(evaluatePreconditions('PUT', { 'if-match': '"o12"' }, weakCurrent), 'precondition-failed');
  });
});

describe('evaluatePreconditions: If-Unmodified-Since (RFC 9110 §13.1.4)', () => {
  it('proceeds when the stored time is at or before the date', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-unmodified-since': AFTER }, current), 'proceed');
    assert.equal(evaluatePreconditions('PUT', { 'if-unmodified-since': SAME_SECOND }, onTheSecond), 'proceed');
  });

  it('fails when modified after the date', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-unmodified-since': BEFORE }, current), 'precondition-failed');
  });

  it('fails closed within the same second: 12:00:00.750 is later than "12:00:00 GMT" (no lost update)', () => {
    // A change at .200 and another at .750 share the Last-Modified "12:00:00": the date cannot say
    // which one the client saw, so the write must not overwrite the later one.
    for (const method of ['PUT', 'PATCH', 'DELETE', 'POST']) {
      assert.equal(
        evaluatePreconditions(method, { 'if-unmodified-since': SAME_SECOND }, current),
        'precondition-failed',
        method,
      );
    }
    const oneMsLater: Validators = { ...onTheSecond, lastModified: new Date('2026-03-01T12:00:00.001Z') };
    assert.equal(
      evaluatePreconditions('PUT', { 'if-unmodified-since': SAME_SECOND }, oneMsLater),
      'precondition-failed',
    );
  });

  it('is ignored when If-Match is present', () => {
    const headers = { 'if-match': '"o12-v3-ab12"', 'if-unmodified-since': BEFORE };
    assert.equal(evaluatePreconditions('PUT', headers, current), 'proceed');
  });

  it('is ignored when the date is invalid or sent twice', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-unmodified-since': 'garbage' }, current), 'proceed');
    assert.equal(evaluatePreconditions('PUT', { 'if-unmodified-since': [BEFORE, BEFORE] }, current), 'proceed');
  });

  it('is ignored when the resource has no modification date', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-unmodified-since': BEFORE }, { etag: '"e"' }), 'proceed');
    assert.equal(evaluatePreconditions('PUT', { 'if-unmodified-since': BEFORE }, null), 'proceed');
  });
});

describe('evaluatePreconditions: If-None-Match (RFC 9110 §13.1.2)', () => {
  it('answers not-modified for GET and HEAD when a tag matches', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-none-match': '"o12-v3-ab12"' }, current), 'not-modified');
    assert.equal(evaluatePreconditions('HEAD', { 'if-none-match': '"o12-v3-ab12"' }, current), 'not-modified');
  });

  it('uses weak comparison, so a W/ tag matches the strong current tag', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-none-match': 'W/"o12-v3-ab12"' }, current), 'not-modified');
  });

  it('fails other methods when a tag matches', () => {
    assert.equal(evaluatePreconditions('DELETE', { 'if-none-match': '"o12-v3-ab12"' }, current), 'precondition-failed');
  });

  it('proceeds when no tag matches, across multiple field lines', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-none-match': ['"a"', 'W/"b", "c"'] }, current), 'proceed');
  });

  it('fails a create-only PUT with * when the resource exists and proceeds when it does not', () => {
    assert.equal(evaluatePreconditions('PUT', { 'if-none-match': '*' }, current), 'precondition-failed');
    assert.equal(evaluatePreconditions('PUT', { 'if-none-match': '*' }, null), 'proceed');
  });

  it('answers not-modified on * for GET when the resource exists', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-none-match': '*' }, current), 'not-modified');
  });

  it('treats a malformed value as matching nothing', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-none-match': 'o12-v3-ab12' }, current), 'proceed');
  });
});

describe('evaluatePreconditions: If-Modified-Since (RFC 9110 §13.1.3)', () => {
  it('answers not-modified when the stored time is at or before the date', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-modified-since': SAME_SECOND }, onTheSecond), 'not-modified');
    assert.equal(evaluatePreconditions('HEAD', { 'if-modified-since': AFTER }, current), 'not-modified');
  });

  it('fails open within the same second: 12:00:00.750 against "12:00:00 GMT" sends the representation', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-modified-since': SAME_SECOND }, current), 'proceed');
    assert.equal(evaluatePreconditions('HEAD', { 'if-modified-since': SAME_SECOND }, current), 'proceed');
  });

  it('proceeds when modified after the date', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-modified-since': BEFORE }, current), 'proceed');
  });

  it('accepts the obsolete date forms', () => {
    assert.equal(
      evaluatePreconditions('GET', { 'if-modified-since': 'Sunday, 01-Mar-26 12:00:00 GMT' }, onTheSecond),
      'not-modified',
    );
    assert.equal(
      evaluatePreconditions('GET', { 'if-modified-since': 'Sun Mar  1 12:00:00 2026' }, onTheSecond),
      'not-modified',
    );
  });

  it('is ignored for methods other than GET and HEAD', () => {
    assert.equal(evaluatePreconditions('POST', { 'if-modified-since': AFTER }, current), 'proceed');
  });

  it('is ignored when If-None-Match is present', () => {
    const headers = { 'if-none-match': '"other"', 'if-modified-since': AFTER };
    assert.equal(evaluatePreconditions('GET', headers, current), 'proceed');
  });

  it('is ignored when the date is invalid or sent twice', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-modified-since': 'not a date' }, current), 'proceed');
    assert.equal(evaluatePreconditions('GET', { 'if-modified-since': [AFTER, AFTER] }, current), 'proceed');
  });

  it('is ignored when the resource has no modification date or does not exist', () => {
    assert.equal(evaluatePreconditions('GET', { 'if-modified-since': AFTER }, { etag: '"e"' }), 'proceed');
    assert.equal(evaluatePreconditions('GET', { 'if-modified-since': AFTER }, null), 'proceed');
  });
});

describe('evaluatePreconditions: evaluation order (RFC 9110 §13.2.2)', () => {
  it('proceeds without any precondition', () => {
    assert.equal(evaluatePreconditions('GET', {}, current), 'proceed');
  });

  it('lets a failed If-Match win over a matching If-None-Match', () => {
    const headers = { 'if-match': '"other"', 'if-none-match': '"o12-v3-ab12"' };
    assert.equal(evaluatePreconditions('GET', headers, current), 'precondition-failed');
  });

  it('lets a failed If-Unmodified-Since win over If-None-Match', () => {
    const headers = { 'if-unmodified-since': BEFORE, 'if-none-match': '"o12-v3-ab12"' };
    assert.equal(evaluatePreconditions('GET', headers, current), 'precondition-failed');
  });

  it('evaluates If-None-Match after a passing If-Match', () => {
    const headers = { 'if-match': '*', 'if-none-match': '"o12-v3-ab12"' };
    assert.equal(evaluatePreconditions('GET', headers, current), 'not-modified');
  });

  it('evaluates If-Modified-Since after a passing If-Unmodified-Since', () => {
    const headers = { 'if-unmodified-since': AFTER, 'if-modified-since': AFTER };
    assert.equal(evaluatePreconditions('GET', headers, current), 'not-modified');
  });

  it('lets a passing If-Match override a failing If-Unmodified-Since of the same second', () => {
    const headers = { 'if-match': '"o12-v3-ab12"', 'if-unmodified-since': SAME_SECOND };
    assert.equal(evaluatePreconditions('PATCH', headers, current), 'proceed');
  });

  it('lets a matching If-None-Match answer 304 whatever If-Modified-Since says', () => {
    const headers = { 'if-none-match': '"o12-v3-ab12"', 'if-modified-since': BEFORE };
    assert.equal(evaluatePreconditions('GET', headers, current), 'not-modified');
  });

  it('ignores If-Modified-Since of the same second when If-None-Match does not match', () => {
    const headers = { 'if-none-match': '"other"', 'if-modified-since': AFTER };
    assert.equal(evaluatePreconditions('GET', headers, onTheSecond), 'proceed');
  });
});
