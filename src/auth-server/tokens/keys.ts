// Signing keys (JWS) and cookie-signing secrets of the authorization server, persisted so that tokens
// and sessions survive restarts and every instance signs with the same keys. Generated on first start.
// `signet keys rotate` publishes new keys before they sign (docs/operations/scaling-out.md, "Rotating
// signing keys"): each new key is `pending` until its `activates_at`, published in the JWKS and accepted for
// cookies by every instance that has loaded it, while the keys it replaces keep signing; at `activates_at`
// (the same instant is their `retired_at`) every instance switches on its own timer. A verifier therefore
// never meets a key it could not have loaded. Retired keys stay published until nothing they signed can still
// be valid, then they are deleted.
import { randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { sql, type Kysely } from 'kysely';
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import { executorDialect } from '../../db/database.ts';
import { isSealed, seal, unseal } from '../../db/sealed.ts';
import type { Database } from '../../db/schema.ts';

/** Longer than any ID token (1 h) or access token (≤ 1 h) signed just before a key retired. */
const RETIRED_JWS_KEY_KEEP_MS = 24 * 3600 * 1000;

/** PostgreSQL NOTIFY channel of a rotation: every instance reloads its keys at once (provider/key-reloader.ts). */
export const KEYS_CHANNEL = 'signet_keys';

/** `signing`: signs (the newest per algorithm) and verifies; `pending`: published, not signing yet; `retired`: published only. */
export type KeyState = 'signing' | 'pending' | 'retired';

export interface KeyMaterial {
  /** Private JWKs, signing keys first (oidc-provider signs with the first key matching an alg), then pending, then retired. */
  jwks: { keys: JWK[] };
  /** Cookie-signing secrets in the same order (keygrip signs with the first, verifies with any). */
  cookieKeys: string[];
  /** Changes whenever a key is added, changes state or is removed: running instances reload on change. */
  fingerprint: string;
  /** The next instant a loaded key changes state (a pending key activates, a key retires): reload then. */
  nextChangeAt: Date | undefined;
}

export class KeyEncryptionError extends Error {}

export function signingAlgorithms(accessTokenAlg: string): string[] {
  // RS256 always: OIDC Core §15.1 makes it the ID token algorithm every relying party supports.
  return [...new Set(['RS256', accessTokenAlg])];
}

/** Creates whatever current key is missing (first start, or a new ACCESS_TOKEN_ALG). */
export async function ensureKeys(db: Kysely<Database>, algorithms: string[], kek: Buffer | undefined): Promise<void> {
  // Instances started together must create one key set, not one each (docs/operations/scaling-out.md, "First start
  // and upgrades"): they take turns, and each looks again once it has its turn. SQLite: the transaction holds the
  // database's single write lock from its start (sqlite-group-commit.ts), even across processes.
  await db.transaction().execute(async (trx) => {
    if (executorDialect(trx) === 'postgres') await sql`select pg_advisory_xact_lock(${FIRST_KEYS_LOCK})`.execute(trx);
    const current = await trx
      .selectFrom('signing_keys')
      .select(['use', 'alg'])
      .where('retired_at', 'is', null)
      .execute();
    const has = (use: string, alg: string): boolean => current.some((k) => k.use === use && k.alg === alg);
    for (const alg of algorithms) if (!has('jws', alg)) await insertJwsKey(trx, alg, kek);
    if (!has('cookie', 'HS256')) await insertCookieKey(trx, kek);
  });
}

/** pg_advisory_xact_lock key of the first key set ("keys" in ASCII). */
const FIRST_KEYS_LOCK = 0x6b657973;

export interface RotationOptions {
  /** How long the new keys are published before they sign (KEY_ROTATION_DELAY). */
  delayMs: number;
  now?: Date;
}

export interface Rotation {
  kids: string[];
  /** When the new keys start signing, and the keys they replace stop. */
  activatesAt: Date;
}

/**
 * Creates fresh keys that sign from `now + delayMs` (at once when no key signs yet), and retires at that
 * instant every key that would still sign then; in one transaction with its audit entry. The one rotation of `signet keys rotate` and
 * POST /api/admin/keys/rotate, so the two cannot drift apart.
 */
export async function rotateKeys(
  db: Kysely<Database>,
  algorithms: string[],
  kek: Buffer | undefined,
  by: Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>,
  options: RotationOptions,
): Promise<Rotation> {
  const now = options.now ?? new Date();
  return db.transaction().execute(async (trx) => {
    // Nothing signs yet (a database no server has started on): there is nothing to wait for.
    const signing = (
      await trx.selectFrom('signing_keys').select(['kid', 'created_at', 'activates_at', 'retired_at']).execute()
    ).some((row) => keyState(row, now) === 'signing');
    const activatesAt = new Date(now.getTime() + (signing ? options.delayMs : 0));
    const retired = await trx
      .updateTable('signing_keys')
      .set({ retired_at: toDbTime(activatesAt) })
      .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', toDbTime(activatesAt))]))
      .returning('kid')
      .execute();
    const kids: string[] = [];
    for (const alg of algorithms) kids.push(await insertJwsKey(trx, alg, kek, now, activatesAt));
    await insertCookieKey(trx, kek, now, activatesAt);
    await recordAudit(trx, {
      ...by,
      action: 'keys.rotated',
      target: { type: 'signing_keys', id: kids.join(' ') },
      // Key ids are public (they are in the JWKS); the cookie keys' ids are left out all the same.
      details: {
        kids,
        retired: retired.map((r) => r.kid).filter((kid) => !kid.startsWith('ck_')),
        activates_at: activatesAt.toISOString(),
      },
    });
    // On PostgreSQL every instance hears of the rotation at commit (NOTIFY) and publishes the new keys at once.
    if (executorDialect(trx) === 'postgres') await sql`select pg_notify(${KEYS_CHANNEL}, '')`.execute(trx);
    return { kids, activatesAt };
  });
}

/** A key as an operator sees it: never its material. */
export interface KeyInfo {
  kid: string;
  use: 'jws' | 'cookie';
  alg: string;
  state: KeyState;
  createdAt: Date;
  /** When it starts (or started) signing. */
  activatesAt: Date;
  /** When it stops (or stopped) signing; null while no rotation has replaced it. */
  retiredAt: Date | null;
}

interface KeyRow {
  kid: string;
  created_at: string | Date;
  activates_at: string | Date | null;
  retired_at: string | Date | null;
}

export function keyState(row: KeyRow, now: Date): KeyState {
  if (row.retired_at !== null && fromDbTime(row.retired_at) <= now) return 'retired';
  if (row.activates_at !== null && fromDbTime(row.activates_at) > now) return 'pending';
  return 'signing';
}

const STATE_ORDER: Record<KeyState, number> = { signing: 0, pending: 1, retired: 2 };

/** Signing keys first, then pending, then retired; newest first within each (the order oidc-provider needs). */
function byState<T extends KeyRow>(rows: T[], now: Date): T[] {
  const ranked = rows.map((row) => ({ row, rank: STATE_ORDER[keyState(row, now)] }));
  ranked.sort(
    (a, b) =>
      a.rank - b.rank ||
      fromDbTime(b.row.created_at).getTime() - fromDbTime(a.row.created_at).getTime() ||
      a.row.kid.localeCompare(b.row.kid),
  );
  return ranked.map((r) => r.row);
}

/** Every stored key in the order loadKeys uses. */
export async function listKeys(db: Kysely<Database>, now = new Date()): Promise<KeyInfo[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'use', 'alg', 'created_at', 'activates_at', 'retired_at'])
    .execute();
  return byState(rows, now).map((r) => ({
    kid: r.kid,
    use: r.use,
    alg: r.alg,
    state: keyState(r, now),
    createdAt: fromDbTime(r.created_at),
    activatesAt: fromDbTime(r.activates_at ?? r.created_at),
    retiredAt: r.retired_at === null ? null : fromDbTime(r.retired_at),
  }));
}

export async function loadKeys(
  db: Kysely<Database>,
  kek: Buffer | undefined,
  cookieKeepMs: number,
  now = new Date(),
): Promise<KeyMaterial> {
  await db
    .deleteFrom('signing_keys')
    .where('use', '=', 'jws')
    .where('retired_at', '<', toDbTime(new Date(now.getTime() - RETIRED_JWS_KEY_KEEP_MS)))
    .execute();
  await db
    .deleteFrom('signing_keys')
    .where('use', '=', 'cookie')
    .where('retired_at', '<', toDbTime(new Date(now.getTime() - cookieKeepMs)))
    .execute();
  const rows = byState(await db.selectFrom('signing_keys').selectAll().execute(), now);
  return {
    jwks: { keys: rows.filter((r) => r.use === 'jws').map((r) => JSON.parse(decrypt(r.material, kek)) as JWK) },
    cookieKeys: rows.filter((r) => r.use === 'cookie').map((r) => decrypt(r.material, kek)),
    fingerprint: rows.map((r) => `${r.kid}:${keyState(r, now)}`).join(','),
    nextChangeAt: nextChange(rows, now),
  };
}

function nextChange(rows: KeyRow[], now: Date): Date | undefined {
  const ahead = rows
    .flatMap((r) => [r.activates_at, r.retired_at])
    .filter((t) => t !== null)
    .map((t) => fromDbTime(t).getTime())
    .filter((t) => t > now.getTime());
  return ahead.length === 0 ? undefined : new Date(Math.min(...ahead));
}

/** The public half of the key set, as served at jwks_uri. */
export function publicJwks(material: KeyMaterial): { keys: JWK[] } {
  return {
    keys: material.jwks.keys.map(({ kty, crv, x, y, n, e, kid, alg, use }) => ({
      kty,
      crv,
      x,
      y,
      n,
      e,
      kid,
      alg,
      use,
    })),
  };
}

async function insertJwsKey(
  db: Kysely<Database>,
  alg: string,
  kek: Buffer | undefined,
  now = new Date(),
  activatesAt: Date | null = null,
): Promise<string> {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(jwk); // RFC 7638: a kid derived from the key itself
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      use: 'jws',
      alg,
      material: encrypt(JSON.stringify({ ...jwk, kid, alg, use: 'sig' }), kek),
      created_at: toDbTime(now),
      activates_at: activatesAt && toDbTime(activatesAt),
      retired_at: null,
    })
    .execute();
  return kid;
}

async function insertCookieKey(
  db: Kysely<Database>,
  kek: Buffer | undefined,
  now = new Date(),
  activatesAt: Date | null = null,
): Promise<void> {
  const kid = `ck_${randomBytes(8).toString('hex')}`;
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      use: 'cookie',
      alg: 'HS256',
      material: encrypt(randomBytes(32).toString('base64url'), kek),
      created_at: toDbTime(now),
      activates_at: activatesAt && toDbTime(activatesAt),
      retired_at: null,
    })
    .execute();
}

function encrypt(plain: string, kek: Buffer | undefined): string {
  return kek ? seal(plain, kek) : plain;
}

function decrypt(stored: string, kek: Buffer | undefined): string {
  if (!isSealed(stored)) return stored;
  if (!kek)
    throw new KeyEncryptionError(
      'the signing keys are encrypted: set KEY_ENCRYPTION_KEY to the key they were stored with',
    );
  try {
    return unseal(stored, kek);
  } catch {
    throw new KeyEncryptionError('KEY_ENCRYPTION_KEY does not decrypt the stored signing keys');
  }
}
