// Idempotency-Key for POST (draft-ietf-httpapi-idempotency-key-header): a retried request gets the
// original result instead of a second effect.
//
// 1. Claim: insert (caller, key, fingerprint, in_flight) and commit at once, so a concurrent request
//    with the same key sees it (409 + Retry-After) instead of waiting or running twice.
// 2. Execute the operation in a transaction that also stores the response on the key row: the order
//    and its replayable result commit together or not at all.
// 3. Failures (validation, conflicts) release the claim: only successful results are stored.
// A claim whose process died is taken over once its lock expires.
// On PostgreSQL a write that can be said as one statement (a create) skips the transaction and claims its
// key in that statement, answered: see WriteUnit. A duplicate then waits for it and replays, as on SQLite.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { executorDialect, type Db, type Executor } from '../db/database.ts';
import { fromDbTime, toDbJson, toDbTime } from '../db/codecs.ts';
import { compiledStatement } from '../db/compiled-statement.ts';
import { callerKeyOf } from '../http/bearer/auth.ts';
import { Problem, PROBLEM_TYPES } from '../http/problems/problems.ts';
import {
  claim,
  currentLock,
  inFlight,
  whileOwned,
  type IdempotencySettings,
  type Operation,
  type Ownership,
  type StoredResponse,
} from './idempotency-keys.ts';
import { claimOrRelease, releaseAfterFailure } from './idempotency-release.ts';
import { runAsStatement } from './idempotency-statement.ts';

export type { IdempotencySettings, StoredResponse } from './idempotency-keys.ts';

// RFC 8941 sf-string (quoted) or a bare token of visible ASCII, 1–255 characters.
const BARE_KEY = /^[\x21-\x7e]{1,255}$/;
const QUOTED_KEY = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\]){1,255})"$/;

function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? undefined : header.trim();
  const quoted = value === undefined ? null : QUOTED_KEY.exec(value);
  if (quoted?.[1]) return quoted[1].replace(/\\(["\\])/g, '$1');
  if (value !== undefined && BARE_KEY.test(value) && !value.startsWith('"')) return value;
  throw new Problem(
    'badRequest',
    'Idempotency-Key must be 1–255 visible ASCII characters (or a quoted structured-field string), sent once',
    {
      errors: [{ pointer: '/headers/idempotency-key', detail: 'invalid key' }],
    },
  );
}

/** RFC 8785-style canonical JSON: members sorted, so key order and whitespace do not change the fingerprint. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body ?? null)}`)
    .digest('base64url');
}

export function sendStored(reply: FastifyReply, stored: StoredResponse, replayed = false): FastifyReply {
  reply.code(stored.status).headers(stored.headers);
  if (replayed) {
    reply.header('idempotent-replayed', 'true');
    reply.server.metrics.idempotencyReplays.inc();
  }
  return reply.send(stored.body === '' ? undefined : stored.body);
}

interface RunOptions {
  /**
   * PostgreSQL: offer the operation a WriteUnit (idempotency-statement.ts) so that it can write in one
   * statement without a transaction. Only for operations that use it (a create): any other would have
   * its first query refused and run again in a transaction.
   */
  oneStatement?: boolean;
}

/** Runs `operation` in a transaction, once per (caller, Idempotency-Key) when the header is present. */
export async function runIdempotent(
  request: FastifyRequest,
  reply: FastifyReply,
  db: Db,
  settings: IdempotencySettings,
  operation: Operation,
  options: RunOptions = {},
): Promise<FastifyReply> {
  try {
    return await runOnce(request, reply, db, settings, operation, options);
  } catch (err) {
    countConflict(request, err);
    throw err;
  }
}

/** signet_idempotency_conflicts_total (docs/reference/metrics.md): the two answers that refuse a key. */
function countConflict(request: FastifyRequest, err: unknown): void {
  if (!(err instanceof Problem)) return;
  if (err.type === PROBLEM_TYPES.idempotencyKeyInFlight)
    request.server.metrics.idempotencyConflicts.labels('in_flight').inc();
  else if (err.type === PROBLEM_TYPES.idempotencyKeyReused)
    request.server.metrics.idempotencyConflicts.labels('key_reused').inc();
}

async function runOnce(
  request: FastifyRequest,
  reply: FastifyReply,
  db: Db,
  settings: IdempotencySettings,
  operation: Operation,
  options: RunOptions,
): Promise<FastifyReply> {
  const key = parseIdempotencyKey(request.headers['idempotency-key']);
  const caller = callerKeyOf(request);
  const fingerprint =
    key === undefined ? '' : requestFingerprint(request.method, request.url.split('?')[0] ?? '', request.body);
  if (options.oneStatement && !settings.singleWriter && executorDialect(db) === 'postgres') {
    const outcome = await runAsStatement(
      db,
      settings,
      key === undefined ? undefined : { caller, key, fingerprint },
      operation,
    );
    if ('stored' in outcome) return sendStored(reply, outcome.stored, outcome.replayed);
    // The operation queried the database itself: it runs in a transaction after all.
  }
  if (key === undefined) return sendStored(reply, await db.transaction().execute(operation));
  if (settings.singleWriter) {
    const outcome = await db.transaction().execute(async (trx) => {
      const claimed = await claim(trx, settings, { caller, key, fingerprint });
      if ('replay' in claimed) return { stored: claimed.replay, replayed: true };
      return {
        stored: await runAndStore(trx, operation, { caller, key, lockedUntil: claimed.lockedUntil }),
        replayed: false,
      };
    });
    return sendStored(reply, outcome.stored, outcome.replayed);
  }
  const claimed = await claimOrRelease(db, settings, { caller, key, fingerprint });
  if ('replay' in claimed) return sendStored(reply, claimed.replay, true);
  // Every write below is conditional on still holding the lock we took: a request that outlived its
  // lock and was taken over must neither commit its result nor release the new owner's claim.
  const owned: Ownership = { caller, key, lockedUntil: claimed.lockedUntil };
  try {
    return sendStored(reply, await db.transaction().execute((trx) => runAndStore(trx, operation, owned)));
  } catch (err) {
    // A lost connection included: the release is retried on another one (idempotency-release.ts).
    throw await releaseAfterFailure(db, owned, err);
  }
}

/** Runs the operation and stores its response on the key row, in the caller's transaction. */
async function runAndStore(trx: Executor, operation: Operation, ours: Ownership): Promise<StoredResponse> {
  const result = await operation(trx);
  const saved = await storeResponse(trx, {
    ...ours,
    status: result.status,
    headers: toDbJson(result.headers),
    body: result.body,
  });
  if (Number(saved.numAffectedRows) !== 1) throw inFlight(await currentLock(trx, ours)); // rolls the operation back
  return result;
}

/** The response, on the key row we still own; compiled once (src/db/compiled-statement.ts). */
const storeResponse = compiledStatement<Ownership & { status: number; headers: string; body: string }, unknown>(
  (db, param) =>
    whileOwned(db.updateTable('idempotency_keys'), {
      caller: param('caller'),
      key: param('key'),
      lockedUntil: param('lockedUntil'),
    }).set({
      state: 'done',
      response_status: param('status'),
      response_headers: param('headers'),
      response_body: param('body'),
    }),
);

/** Keys deleted per statement by purgeExpiredKeys. */
const KEY_PURGE_BATCH = 500;

/**
 * Deletes expired keys; returns how many. Run periodically by the app. In batches of `batchSize`,
 * oldest first (idempotency_keys_expires_idx), yielding to the event loop between them: a backlog
 * (a day of keys after an outage) never holds the writer (SQLite runs a statement on the event loop,
 * under its single write lock) for longer than one batch. Each batch starts where the last one ended
 * (`expires_at >= mark`): on PostgreSQL the deleted rows stay in the index until VACUUM, and a scan
 * from the start would step over all of them again in every batch.
 */
export async function purgeExpiredKeys(db: Db, now: Date, batchSize = KEY_PURGE_BATCH): Promise<number> {
  let total = 0;
  let mark: string | Date | undefined;
  for (;;) {
    let expired = db
      .selectFrom('idempotency_keys')
      .select(['caller', 'key'])
      .where('expires_at', '<=', toDbTime(now))
      .orderBy('expires_at')
      .limit(batchSize);
    if (mark !== undefined) expired = expired.where('expires_at', '>=', mark);
    // A row value IN a subquery: SQLite 3.15+ (https://sqlite.org/rowvalue.html) and PostgreSQL.
    const deleted = await db
      .deleteFrom('idempotency_keys')
      .where(({ eb, refTuple }) => eb(refTuple('caller', 'key'), 'in', expired.$asTuple('caller', 'key')))
      .returning('expires_at')
      .execute();
    total += deleted.length;
    if (deleted.length < batchSize) return total;
    mark = deleted.map((row) => row.expires_at).reduce(latest);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The later of two stored times (ISO text on SQLite, a Date on PostgreSQL). */
function latest<T extends string | Date>(a: T, b: T): T {
  return fromDbTime(a) >= fromDbTime(b) ? a : b;
}
