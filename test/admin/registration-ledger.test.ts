// The note a registration policy leaves for the storing adapter (who registered which client) never
// outlives a registration oidc-provider refused after the policies ran: the ledger cannot grow for ever.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RegistrationLedger } from '../../src/auth-server/clients/registration.ts';

const by = { actor: { type: 'client' as const, id: 'iat-holder' } };

test('a note nobody takes expires; a taken note is gone; an unknown client falls back to itself', () => {
  const ledger = new RegistrationLedger();
  for (let i = 0; i < 100; i++) ledger.note(`refused-${i}`, by, 0);
  assert.equal(ledger.size, 100);
  ledger.note('registered', by, RegistrationLedger.KEEP_MS + 1);
  assert.equal(ledger.size, 1, 'the refused registrations’ notes expired');
  assert.deepEqual(ledger.take('registered'), by);
  assert.equal(ledger.size, 0);
  assert.deepEqual(ledger.take('never-noted'), { actor: { type: 'client', id: 'never-noted' } });
});
