// Signing keys (JWS) and cookie-signing secrets of the authorization server, persisted so that tokens
// and sessions survive restarts and every instance signs with the same keys. Generated on first start;
// `signet keys rotate` retires the current ones: retired keys stay published (JWKS) and accepted for
// cookies until nothing they signed can still be valid, then they are deleted.
import { randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { Kysely } from 'kysely';
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import { fromDbTime, toDbTime } from '../../db/codecs.ts';
import { isSealed, seal, unseal } from '../../db/sealed.ts';
import type { Database } from '../../db/schema.ts';

/** Longer than any ID token (1 h) or access token (≤ 1 h) signed just before a rotation. */
const RETIRED_JWS_KEY_KEEP_MS = 24 * 3600 * 1000;

export interface KeyMaterial {
  /** Private JWKs, current keys first (oidc-provider signs with the first key matching an alg). */
  jwks: { keys: JWK[] };
  /** Cookie-signing secrets, the current one first (keygrip signs with the first, verifies with any). */
  cookieKeys: string[];
  /** Changes whenever a key is added, retired or removed: running instances reload on change. */
  fingerprint: string;
}

export class KeyEncryptionError extends Error {}

export function signingAlgorithms(accessTokenAlg: string): string[] {
  // RS256 always: OIDC Core §15.1 makes it the ID token algorithm every relying party supports.
  return [...new Set(['RS256', accessTokenAlg])];
}

/** Creates whatever current key is missing (first start, or a new ACCESS_TOKEN_ALG). */
export async function ensureKeys(db: Kysely<Database>, algorithms: string[], kek: Buffer | undefined): Promise<void> {
  const current = await db.selectFrom('signing_keys').select(['use', 'alg']).where('retired_at', 'is', null).execute();
  const has = (use: string, alg: string): boolean => current.some((k) => k.use === use && k.alg === alg);
  for (const alg of algorithms) if (!has('jws', alg)) await insertJwsKey(db, alg, kek);
  if (!has('cookie', 'HS256')) await insertCookieKey(db, kek);
}

/**
 * Retires every current key and creates fresh ones, in one transaction with its audit entry. The one
 * rotation of `signet keys rotate` and POST /api/admin/keys/rotate, so the two cannot drift apart.
 */
export async function rotateKeys(
  db: Kysely<Database>,
  algorithms: string[],
  kek: Buffer | undefined,
  by: Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'>,
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const retired = await trx
      .updateTable('signing_keys')
      .set({ retired_at: toDbTime(new Date()) })
      .where('retired_at', 'is', null)
      .returning('kid')
      .execute();
    const kids: string[] = [];
    for (const alg of algorithms) kids.push(await insertJwsKey(trx, alg, kek));
    await insertCookieKey(trx, kek);
    await recordAudit(trx, {
      ...by,
      action: 'keys.rotated',
      target: { type: 'signing_keys', id: kids.join(' ') },
      // Key ids are public (they are in the JWKS); the cookie keys' ids are left out all the same.
      details: { kids, retired: retired.map((r) => r.kid).filter((kid) => !kid.startsWith('ck_')) },
    });
    return kids;
  });
}

/** A key as an operator sees it: never its material. */
export interface KeyInfo {
  kid: string;
  use: 'jws' | 'cookie';
  alg: string;
  createdAt: Date;
  retiredAt: Date | null;
}

/** Every stored key, current ones first, then retired ones newest first (the order loadKeys uses). */
export async function listKeys(db: Kysely<Database>): Promise<KeyInfo[]> {
  const rows = await db.selectFrom('signing_keys').select(['kid', 'use', 'alg', 'created_at', 'retired_at']).execute();
  const keys = rows.map((r) => ({
    kid: r.kid,
    use: r.use as KeyInfo['use'],
    alg: r.alg,
    createdAt: fromDbTime(r.created_at),
    retiredAt: r.retired_at === null ? null : fromDbTime(r.retired_at),
  }));
  return keys.sort(
    (a, b) =>
      Number(a.retiredAt !== null) - Number(b.retiredAt !== null) ||
      b.createdAt.getTime() - a.createdAt.getTime() ||
      a.kid.localeCompare(b.kid),
  );
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
  const rows = await db.selectFrom('signing_keys').selectAll().execute();
  // Current keys first, then retired ones newest first.
  rows.sort(
    (a, b) =>
      Number(a.retired_at !== null) - Number(b.retired_at !== null) ||
      new Date(b.created_at).getTime() - new Date(a.created_at).getTime(),
  );
  return {
    jwks: { keys: rows.filter((r) => r.use === 'jws').map((r) => JSON.parse(decrypt(r.material, kek)) as JWK) },
    cookieKeys: rows.filter((r) => r.use === 'cookie').map((r) => decrypt(r.material, kek)),
    fingerprint: rows.map((r) => `${r.kid}:${r.retired_at === null ? 'current' : 'retired'}`).join(','),
  };
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

async function insertJwsKey(db: Kysely<Database>, alg: string, kek: Buffer | undefined): Promise<string> {
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
      created_at: toDbTime(new Date()),
      retired_at: null,
    })
    .execute();
  return kid;
}

async function insertCookieKey(db: Kysely<Database>, kek: Buffer | undefined): Promise<void> {
  const kid = `ck_${randomBytes(8).toString('hex')}`;
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      use: 'cookie',
      alg: 'HS256',
      material: encrypt(randomBytes(32).toString('base64url'), kek),
      created_at: toDbTime(new Date()),
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
