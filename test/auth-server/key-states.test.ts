// The states a stored signing key goes through (src/auth-server/tokens/keys.ts; docs/operations/scaling-out.md,
// "Rotating signing keys"): a rotation's keys are pending (published, not signing) until its activation,
// when the keys they replace retire; two rotations in a row hand over in order; the loaded set says when it
// next changes. Read at chosen instants, on a real database.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { ensureKeys, listKeys, loadKeys, rotateKeys, type KeyMaterial } from '../../src/auth-server/tokens/keys.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';

const ALGS = ['RS256', 'ES256'];
const BY = { actor: { type: 'cli', id: 'test' } } as const;
const KEEP_COOKIES_MS = 14 * 86_400_000;

/** The kid oidc-provider signs with for `alg`: the first key of that alg in the set it is given. */
const signerOf = (keys: KeyMaterial, alg: string): string | undefined => keys.jwks.keys.find((k) => k.alg === alg)?.kid;
const published = (keys: KeyMaterial): string[] => keys.jwks.keys.map((k) => String(k.kid));

for (const dialect of testDialects()) {
  describe(`signing key states [${dialect}]`, () => {
    let handle: DatabaseHandle;
    useMigratedDatabase(dialect, (opened) => {
      handle = opened;
    });

    test('a rotation on a database where nothing signs yet activates at once', async () => {
      const now = new Date();
      const rotation = await rotateKeys(handle.db, ALGS, undefined, BY, { delayMs: 60_000, now });
      assert.equal(rotation.activatesAt.getTime(), now.getTime(), JSON.stringify(rotation));
      const keys = await loadKeys(handle.db, undefined, KEEP_COOKIES_MS, new Date(now.getTime() + 1));
      for (const alg of ALGS) assert.ok(rotation.kids.includes(signerOf(keys, alg)!), JSON.stringify(published(keys)));
      await handle.db.deleteFrom('signing_keys').execute();
    });

    test('pending keys are published at once and sign from their activation; two rotations hand over in order', async () => {
      const t0 = Date.now();
      const at = (ms: number) => new Date(t0 + ms);
      await ensureKeys(handle.db, ALGS, undefined);
      const original = await loadKeys(handle.db, undefined, KEEP_COOKIES_MS, at(0));
      const firstSigner = signerOf(original, 'ES256')!;
      assert.equal(original.nextChangeAt, undefined, 'nothing scheduled before a rotation');

      const first = await rotateKeys(handle.db, ALGS, undefined, BY, { delayMs: 60_000, now: at(1) });
      assert.equal(first.activatesAt.getTime(), t0 + 60_001);
      const pending = await loadKeys(handle.db, undefined, KEEP_COOKIES_MS, at(2));
      for (const kid of first.kids) assert.ok(published(pending).includes(kid), `${kid} published while pending`);
      assert.equal(signerOf(pending, 'ES256'), firstSigner, 'the old key signs while the new one is pending');
      assert.equal(pending.nextChangeAt?.getTime(), first.activatesAt.getTime(), 'reload at the activation');
      assert.notEqual(pending.fingerprint, original.fingerprint, 'a rotation changes the fingerprint at once');
      // keygrip signs cookies with the first key and accepts any: the old one signs, the new one is accepted.
      assert.equal(pending.cookieKeys.length, 2, 'the new cookie key is accepted while pending');
      assert.equal(
        pending.cookieKeys[0],
        original.cookieKeys[0],
        'the old cookie key signs while the new one is pending',
      );

      // A second rotation before the first activated: the first keys sign between the two activations.
      const second = await rotateKeys(handle.db, ALGS, undefined, BY, { delayMs: 60_000, now: at(10_000) });
      const between = await loadKeys(handle.db, undefined, KEEP_COOKIES_MS, at(65_000));
      assert.ok(first.kids.includes(signerOf(between, 'ES256')!), `first rotation signs: ${published(between)}`);
      assert.ok(first.kids.includes(signerOf(between, 'RS256')!), `first rotation signs: ${published(between)}`);
      assert.equal(between.nextChangeAt?.getTime(), second.activatesAt.getTime());
      const states = Object.fromEntries((await listKeys(handle.db, at(65_000))).map((k) => [k.kid, k.state]));
      assert.equal(states[firstSigner], 'retired', JSON.stringify(states));
      for (const kid of second.kids) assert.equal(states[kid], 'pending', JSON.stringify(states));

      const afterwards = await loadKeys(handle.db, undefined, KEEP_COOKIES_MS, at(70_001));
      assert.ok(
        second.kids.includes(signerOf(afterwards, 'ES256')!),
        `second rotation signs: ${published(afterwards)}`,
      );
      assert.equal(afterwards.nextChangeAt, undefined, 'nothing left to change');
      assert.ok(!pending.cookieKeys.includes(afterwards.cookieKeys[0]!), 'the cookie key of the second rotation signs');
      assert.ok(afterwards.cookieKeys.includes(original.cookieKeys[0]!), 'the retired cookie key is still accepted');
      for (const kid of [firstSigner, ...first.kids])
        assert.ok(published(afterwards).includes(kid), `${kid} still published after it retired`);
      const listed = await listKeys(handle.db, at(70_001));
      assert.deepEqual(
        listed.map((k) => k.state),
        [...listed.filter((k) => k.state === 'signing'), ...listed.filter((k) => k.state !== 'signing')].map(
          (k) => k.state,
        ),
        'signing keys listed first',
      );
    });
  });
}
