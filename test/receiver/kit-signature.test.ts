// verifySignature / signBody: the published GitHub example, secret rotation, each typed failure, and
// interop with @octokit/webhooks-methods in both directions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sign, verify } from '@octokit/webhooks-methods';
import { signBody, verifySignature } from '../../src/receiver/index.ts';

// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
const GITHUB_SECRET = "It's a Secret to Everybody";
const GITHUB_BODY = 'Hello, World!';
const GITHUB_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

test("verifies GitHub's published example, as a string and as raw bytes", () => {
  assert.deepEqual(verifySignature(GITHUB_BODY, GITHUB_SIGNATURE, [GITHUB_SECRET]), { ok: true, secretIndex: 0 });
  assert.deepEqual(verifySignature(Buffer.from(GITHUB_BODY), GITHUB_SIGNATURE, [GITHUB_SECRET]), {
    ok: true,
    secretIndex: 0,
  });
  assert.equal(signBody(GITHUB_BODY, GITHUB_SECRET), GITHUB_SIGNATURE);
});

test('accepts a signature made with any configured secret (rotation) and says which', () => {
  const secrets = ['newest', 'previous', GITHUB_SECRET];
  assert.deepEqual(verifySignature(GITHUB_BODY, GITHUB_SIGNATURE, secrets), { ok: true, secretIndex: 2 });
  assert.deepEqual(verifySignature(GITHUB_BODY, signBody(GITHUB_BODY, 'previous'), secrets), {
    ok: true,
    secretIndex: 1,
  });
  assert.deepEqual(verifySignature(GITHUB_BODY, GITHUB_SIGNATURE, ['newest', 'previous']), {
    ok: false,
    reason: 'mismatch',
  });
  assert.deepEqual(verifySignature(GITHUB_BODY, GITHUB_SIGNATURE, []), { ok: false, reason: 'mismatch' });
});

test('names the reason for each rejected signature header', () => {
  const hex = GITHUB_SIGNATURE.slice('sha256='.length);
  const cases: [string | undefined, string][] = [
    [undefined, 'missing'],
    ['', 'missing'],
    [`sha1=${hex.slice(0, 40)}`, 'wrong_prefix'],
    [hex, 'wrong_prefix'],
    [`SHA256=${hex}`, 'wrong_prefix'],
    [`sha256=${hex.toUpperCase()}`, 'malformed'],
    [`sha256=${hex.slice(0, 63)}`, 'malformed'],
    [`sha256=${hex}0`, 'malformed'],
    [`sha256=${hex.slice(0, 62)}zz`, 'malformed'],
    ['sha256=', 'malformed'],
    [`sha256=${hex.slice(0, 63)}${hex.endsWith('0') ? '1' : '0'}`, 'mismatch'],
  ];
  for (const [header, reason] of cases) {
    assert.deepEqual(
      verifySignature(GITHUB_BODY, header, [GITHUB_SECRET]),
      { ok: false, reason },
      `header ${String(header)}`,
    );
  }
});

test('a body changed by one byte no longer verifies', () => {
  assert.deepEqual(verifySignature('Hello, World?', GITHUB_SIGNATURE, [GITHUB_SECRET]), {
    ok: false,
    reason: 'mismatch',
  });
});

test('verifies what @octokit/webhooks-methods sign() produces', async () => {
  const body = '{"Id":"evt_1","Type":"order.created","Data":{"Total":12.5,"Note":"café ✓"}}';
  const signature = await sign('octokit-secret', body);
  assert.deepEqual(verifySignature(body, signature, ['other', 'octokit-secret']), { ok: true, secretIndex: 1 });
  assert.deepEqual(verifySignature(Buffer.from(body, 'utf8'), signature, ['octokit-secret']), {
    ok: true,
    secretIndex: 0,
  });
});

test('@octokit/webhooks-methods verify() accepts what signBody produces', async () => {
  const body = '{"Id":"evt_2","Type":"order.paid","Data":{"Note":"naïve ☕"}}';
  assert.equal(await verify('kit-secret', body, signBody(body, 'kit-secret')), true);
  assert.equal(await verify('kit-secret', body, signBody(body, 'another-secret')), false);
});
