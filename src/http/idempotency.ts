// Idempotency-Key for POST (draft-ietf-httpapi-idempotency-key-header): a retried request gets the
// original result instead of a second effect.
//
// 1. Claim: insert (caller, key, fingerprint, in_flight) and commit at once, so a concurrent request
//    with the same key sees it (409 + Retry-After) instead of waiting or running twice.
// 2. Execute the operation in a transaction that also stores the response on the key row: the order
//    and its replayable result commit together or not at all.
// 3. Failures (validation, conflicts) release the claim: only successful results are stored.
// A claim whose process died is taken over once its lock expires.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db, Executor } from '../db/database.ts';
import { fromDbJson, fromDbTime, toDbJson, toDbTime } from '../db/codecs.ts';
import { Problem, PROBLEM_TYPES } from './problems.ts';

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface IdempotencySettings {
  ttlSeconds: number;
  lockSeconds: number;
  /**
   * True on SQLite: the database runs one write transaction at a time, so no other request can see
   * the key between claim and result; claiming inside the operation's transaction saves a commit.
   */
  singleWriter: boolean;
}

type Operation = (trx: Executor) => Promise<StoredResponse>;

// RFC 8941 sf-string (quoted) or a bare token of visible ASCII, 1–255 characters.
const BARE_KEY = /^[\x21-\x7e]{1,255}$/;
const QUOTED_KEY = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\]){1,255})"$/;

export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
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

/** Runs `operation` in a transaction, once per (caller, Idempotency-Key) when the header is present. */
export async function runIdempotent(
  request: FastifyRequest,
  reply: FastifyReply,
  db: Db,
  settings: IdempotencySettings,
  operation: Operation,
): Promise<FastifyReply> {
  try {
    return await runOnce(request, reply, db, settings, operation);
  } catch (err) {
    countConflict(request, err);
    throw err;
  }
}

/** signet_idempotency_conflicts_total (README, "Metrics"): the two answers that refuse a key. */
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
): Promise<FastifyReply> {
  const key = parseIdempotencyKey(request.headers['idempotency-key']);
  if (key === undefined) return sendStored(reply, await db.transaction().execute(operation));
  const caller = request.principal?.callerKey ?? `ip:${request.clientOrigin.ip}`;
  const fingerprint = requestFingerprint(request.method, request.url.split('?')[0] ?? '', request.body);
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
  const claimed = await claim(db, settings, { caller, key, fingerprint });
  if ('replay' in claimed) return sendStored(reply, claimed.replay, true);
  // Every write below is conditional on still holding the lock we took: a request that outlived its
  // lock and was taken over must neither commit its result nor release the new owner's claim.
  const ours = { caller, key, lockedUntil: claimed.lockedUntil };
  try {
    return sendStored(reply, await db.transaction().execute((trx) => runAndStore(trx, operation, ours)));
  } catch (err) {
    await whileOwned(db.deleteFrom('idempotency_keys'), ours).execute();
    throw err;
  }
}

/** Runs the operation and stores its response on the key row, in the caller's transaction. */
async function runAndStore(trx: Executor, operation: Operation, ours: Ownership): Promise<StoredResponse> {
  const result = await operation(trx);
  const saved = await whileOwned(trx.updateTable('idempotency_keys'), ours)
    .set({
      state: 'done',
      response_status: result.status,
      response_headers: toDbJson(result.headers),
      response_body: result.body,
    })
    .executeTakeFirst();
  if (Number(saved.numUpdatedRows) !== 1) throw inFlight(await currentLock(trx, ours)); // rolls the operation back
  return result;
}

/** The lock of whichever request took the key over from us, if it still holds it. */
async function currentLock(db: Executor, ours: Ownership): Promise<Date | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select('locked_until')
    .where('caller', '=', ours.caller)
    .where('key', '=', ours.key)
    .where('state', '=', 'in_flight')
    .executeTakeFirst();
  return row && fromDbTime(row.locked_until);
}

interface Ownership {
  caller: string;
  key: string;
  lockedUntil: string;
}

// Narrow structural type: both UPDATE and DELETE builders offer `where` with these columns.
interface KeyFilterable<T> {
  where(column: 'caller' | 'key' | 'state' | 'locked_until', op: '=', value: string): T;
}

function whileOwned<T extends KeyFilterable<T>>(query: T, ours: Ownership): T {
  return query
    .where('caller', '=', ours.caller)
    .where('key', '=', ours.key)
    .where('state', '=', 'in_flight')
    .where('locked_until', '=', ours.lockedUntil);
}

/**
 * 409 while another request holds the key. Retry-After is the time left on its lock (whole seconds,
 * rounded up, at least 1): by then the key has either been answered (the retry replays it) or been
 * abandoned by a crashed request (the retry takes it over). A constant 1 sent clients back every
 * second for the whole lock after a crash.
 */
function inFlight(lockedUntil?: Date, now = new Date()): Problem {
  const seconds = lockedUntil ? Math.max(1, Math.ceil((lockedUntil.getTime() - now.getTime()) / 1000)) : 1;
  return new Problem(
    'idempotencyKeyInFlight',
    `the first request with this key has not finished; retry in ${seconds} s`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

interface KeyId {
  caller: string;
  key: string;
  fingerprint: string;
}

type Claim = { replay: StoredResponse } | { lockedUntil: string };

/** Either a stored response to replay, or the lock this request now holds on the key. */
async function claim(db: Executor, settings: IdempotencySettings, id: KeyId, attempt = 0): Promise<Claim> {
  const now = new Date();
  const lockedUntil = toDbTime(new Date(now.getTime() + settings.lockSeconds * 1000));
  const inserted = await db
    .insertInto('idempotency_keys')
    .values({
      ...id,
      state: 'in_flight',
      locked_until: lockedUntil,
      created_at: toDbTime(now),
      expires_at: toDbTime(new Date(now.getTime() + settings.ttlSeconds * 1000)),
    })
    .onConflict((oc) => oc.columns(['caller', 'key']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { lockedUntil };

  const row = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('caller', '=', id.caller)
    .where('key', '=', id.key)
    .executeTakeFirst();
  // Released meanwhile: try to claim again. Never report ownership without a row we inserted or took
  // over: the operation would then run unguarded, next to the request that does own the key.
  if (!row) {
    if (attempt < 2) return claim(db, settings, id, attempt + 1);
    throw inFlight();
  }
  if (fromDbTime(row.expires_at) <= now) {
    await db
      .deleteFrom('idempotency_keys')
      .where('caller', '=', id.caller)
      .where('key', '=', id.key)
      .where('expires_at', '=', row.expires_at)
      .execute();
    return claim(db, settings, id, attempt + 1);
  }
  if (row.fingerprint !== id.fingerprint) {
    throw new Problem(
      'idempotencyKeyReused',
      'this Idempotency-Key was already used with a different method, path or body; use a new key for a new request',
    );
  }
  if (row.state === 'done') {
    return {
      replay: {
        status: row.response_status ?? 200,
        headers: fromDbJson<Record<string, string>>(row.response_headers) ?? {},
        body: row.response_body ?? '',
      },
    };
  }
  if (fromDbTime(row.locked_until) > now || attempt >= 2) throw inFlight(fromDbTime(row.locked_until), now);
  // The owner died without finishing: take the claim over, unless another request just did.
  const taken = await db
    .updateTable('idempotency_keys')
    .set({ locked_until: lockedUntil })
    .where('caller', '=', id.caller)
    .where('key', '=', id.key)
    .where('state', '=', 'in_flight')
    .where('locked_until', '=', row.locked_until)
    .executeTakeFirst();
  return Number(taken.numUpdatedRows) === 1 ? { lockedUntil } : claim(db, settings, id, attempt + 1);
}

/** Deletes expired keys; returns how many. Run periodically by the app. */
export async function purgeExpiredKeys(db: Db, now: Date): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', toDbTime(now)).executeTakeFirst();
  return Number(result.numDeletedRows);
}
