import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeCursor, encodeCursor, MAX_CURSOR_LENGTH } from '../../src/http/representation/cursor.ts';

const shape = { id: 'string', createdAt: 'number' } as const;
const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');

describe('encodeCursor / decodeCursor', () => {
  it('round-trips a payload', () => {
    const payload = { id: 'o_12', createdAt: 1767225600123 };
    assert.deepEqual(decodeCursor(encodeCursor(payload), shape), payload);
  });

  it('round-trips unicode strings and negative fractional numbers', () => {
    const payload = { id: 'zürich-東京', createdAt: -1.5 };
    assert.deepEqual(decodeCursor(encodeCursor(payload), shape), payload);
  });

  it('produces URL-safe text without padding', () => {
    assert.match(encodeCursor({ id: '??>>', createdAt: 1 }), /^[A-Za-z0-9_-]+$/);
  });

  it('refuses to encode non-finite numbers', () => {
    assert.throws(() => encodeCursor({ id: 'a', createdAt: Number.NaN }), RangeError);
  });
});

describe('decodeCursor rejects', () => {
  it('the empty string', () => {
    assert.equal(decodeCursor('', shape), null);
  });

  it('input longer than the maximum length', () => {
    const long = encodeCursor({ id: 'x'.repeat(MAX_CURSOR_LENGTH), createdAt: 1 });
    assert.equal(decodeCursor(long, shape), null);
  });

  it('characters outside the base64url alphabet, including padding and standard base64', () => {
    const valid = encodeCursor({ id: 'a', createdAt: 1 });
    for (const bad of [`${valid}=`, `${valid}+`, `${valid}/`, ` ${valid}`, `${valid}\n`, `${valid}.x`]) {
      assert.equal(decodeCursor(bad, shape), null, bad);
    }
  });

  it('non-canonical base64url such as a dangling character', () => {
    const valid = encodeCursor({ id: 'a', createdAt: 1 });
    assert.equal(decodeCursor(`${valid}A`, shape), null);
  });

  it('payloads that are not valid UTF-8', () => {
    assert.equal(decodeCursor(Buffer.from([0x7b, 0xff, 0x7d]).toString('base64url'), shape), null);
  });

  it('payloads that are not JSON', () => {
    assert.equal(decodeCursor(b64('{id:1}'), shape), null);
  });

  it('JSON that is not an object', () => {
    for (const json of ['null', '[]', '["a",1]', '"a"', '1']) {
      assert.equal(decodeCursor(b64(json), shape), null, json);
    }
  });

  it('missing, extra and renamed keys', () => {
    for (const json of ['{"id":"a"}', '{"id":"a","createdAt":1,"x":1}', '{"id":"a","created":1}']) {
      assert.equal(decodeCursor(b64(json), shape), null, json);
    }
  });

  it('values of the wrong type', () => {
    for (const json of ['{"id":1,"createdAt":1}', '{"id":"a","createdAt":"1"}', '{"id":"a","createdAt":null}']) {
      assert.equal(decodeCursor(b64(json), shape), null, json);
    }
  });

  it('numbers that overflow to Infinity', () => {
    assert.equal(decodeCursor(b64('{"id":"a","createdAt":1e999}'), shape), null);
  });

  it('a __proto__ key in place of a declared one', () => {
    assert.equal(decodeCursor(b64('{"id":"a","__proto__":{"createdAt":1}}'), shape), null);
  });
});
