// Releasing a key whose request failed (docs/guides/calling-the-api.md, "Idempotency-Key";
// docs/operations/failure-behaviour.md, "PostgreSQL"). A request cut by a lost database connection must
// not leave its key claimed: the retry its 503 invites would get 409 `idempotency-key-in-flight` until
// the claim's lock expires. The release is sent again on another pooled connection (the one the request
// used is gone, and idle ones may have died with it), a few times within a short budget so the 503 is
// not held up for long; should the database still not take it, the 503 says the true wait, the time
// until the claim's lock ends, after which the retry takes the claim over (RFC 9110 §10.2.3, §15.6.4).
// The lock itself stays as long as IDEMPOTENCY_LOCK_SECONDS: it must outlast the slowest request that
// still finishes, since a request whose claim was taken over cannot commit (idempotency.ts), so a lock
// as short as one request would turn a slow write into a failed one.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Executor } from '../db/executor.ts';
import { fromDbTime } from '../db/codecs.ts';
import { Problem } from '../http/problems/problems.ts';
import { isConnectFailure, isDatabaseOutage } from '../http/problems/outage.ts';
import {
  claim,
  newLock,
  release,
  type Claim,
  type IdempotencySettings,
  type KeyId,
  type Ownership,
} from './idempotency-keys.ts';

/** Pauses before each further attempt: long enough for the pool to drop connections that died together. */
const RELEASE_BACKOFF_MS = [50, 150, 400, 800];
/** No attempt starts after this long: the client is waiting for its 503. */
const RELEASE_BUDGET_MS = 2000;

/**
 * The error to answer a failed request with, once its key is released. If the key could not be
 * released and the failure is an outage, a 503 whose Retry-After is the time until the claim expires;
 * any other failure is answered as it is (a retry with the key then gets 409 with the same wait).
 */
export async function releaseAfterFailure(db: Executor, ours: Ownership, failure: unknown): Promise<unknown> {
  if (await releaseWithRetries(db, ours)) return failure;
  if (!isDatabaseOutage(failure)) return failure;
  return claimHeld(ours);
}

/**
 * claim(); when its answer is lost with the connection, the claim may have committed all the same, and
 * is released as a failed request's would be.
 */
export async function claimOrRelease(db: Executor, settings: IdempotencySettings, id: KeyId): Promise<Claim> {
  const lockedUntil = newLock(settings);
  try {
    return await claim(db, settings, id, lockedUntil);
  } catch (err) {
    // A claim that never reached the database has nothing to release.
    if (!isDatabaseOutage(err) || isConnectFailure(err)) throw err;
    throw await releaseAfterFailure(db, { caller: id.caller, key: id.key, lockedUntil }, err);
  }
}

/** Deletes our claim, retried on outages; whether the database took the release (or had nothing to release). */
export async function releaseWithRetries(db: Executor, ours: Ownership): Promise<boolean> {
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      await release(db, ours);
      return true;
    } catch (err) {
      const pause = RELEASE_BACKOFF_MS[attempt];
      if (!isDatabaseOutage(err) || pause === undefined || Date.now() - started + pause > RELEASE_BUDGET_MS)
        return false;
      await sleep(pause);
    }
  }
}

/** 503 with Retry-After: the whole seconds until our claim's lock ends (rounded up, at least 1). */
export function claimHeld(ours: Ownership, now = new Date()): Problem {
  const seconds = Math.max(1, Math.ceil((fromDbTime(ours.lockedUntil).getTime() - now.getTime()) / 1000));
  return new Problem(
    'temporarilyUnavailable',
    `the database connection was lost and this request's Idempotency-Key could not be released; retry in ${seconds} s, when it can be taken over`,
    { headers: { 'retry-after': String(seconds) } },
  );
}
