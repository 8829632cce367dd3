// oidc-provider's storage adapter over Kysely: one table for every model it persists (sessions,
// interactions, grants, authorization codes, refresh tokens …), on SQLite and PostgreSQL alike.
// Clients are not stored here: they live in oauth_clients (see clients.repository.ts and ClientAdapter).
//
// Codes and opaque tokens are bearer credentials whose value is the row id (oidc-provider looks them up
// by the value presented). They are stored under its SHA-256, and their payload without `jti` (the
// value again), so the rows of a leaked database redeem nothing. The values carry 256 random bits
// (oidc-provider's bitsOfOpaqueRandomness), so an unsalted hash cannot be reversed by guessing.
import { createHash } from 'node:crypto';
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import type { Kysely } from 'kysely';
import { toDbTime } from '../../db/codecs.ts';
import type { Executor } from '../../db/executor.ts';
import type { Database } from '../../db/schema.ts';
import { findClientMetadata } from '../clients/clients.repository.ts';

/**
 * The models stored by the hash of their id: every credential this configuration issues that is found
 * by its value alone. Not DeviceCode (the device flow is off, and oidc-provider also finds a device
 * code by its user code, where the value could not be given back), nor Session, Interaction and Grant:
 * their ids are useless without the signed cookies or the login that go with them.
 * Migration 0004-hashed-token-ids rehashed the rows stored before; it repeats this list and this hash.
 */
const HASHED_MODELS: ReadonlySet<string> = new Set([
  'AuthorizationCode',
  'RefreshToken',
  'AccessToken',
  'ClientCredentials',
  // Dynamic registration's bearer values (RFC 7591 §3, RFC 7592 §3): never stored before registration existed.
  'InitialAccessToken',
  'RegistrationAccessToken',
]);

export function hashTokenId(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

/** Grant-bound models: revoking a grant deletes every row that carries its id. */
export async function revokeGrant(db: Executor, grantId: string): Promise<void> {
  await db.deleteFrom('oidc_payloads').where('grant_id', '=', grantId).execute();
  await db.deleteFrom('oidc_payloads').where('model', '=', 'Grant').where('id', '=', grantId).execute();
}

/**
 * Everything held for one account: its sessions, grants, codes and refresh tokens (each row carries
 * the `accountId` of its payload). Used when a user is disabled or deleted: the next request with one
 * of them finds nothing, so it fails at once (RFC 6749 §5.2 invalid_grant for a refresh token).
 */
export async function revokeAccount(db: Executor, accountId: string): Promise<number> {
  const result = await db.deleteFrom('oidc_payloads').where('account_id', '=', accountId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function purgeExpiredPayloads(db: Kysely<Database>, now: Date): Promise<number> {
  const result = await db.deleteFrom('oidc_payloads').where('expires_at', '<', toDbTime(now)).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export class KyselyAdapter implements Adapter {
  readonly #db: Kysely<Database>;
  readonly #model: string;
  readonly #hashed: boolean;

  constructor(db: Kysely<Database>, model: string) {
    this.#db = db;
    this.#model = model;
    this.#hashed = HASHED_MODELS.has(model);
  }

  /** The row id for the value oidc-provider hands over: the value itself, or its hash. */
  #rowId(id: string): string {
    return this.#hashed ? hashTokenId(id) : id;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const stored = this.#hashed ? withoutJti(payload) : payload;
    const row = {
      payload: JSON.stringify(stored),
      grant_id: payload.grantId ?? null,
      client_id: payload.clientId ?? null,
      account_id: payload.accountId ?? null,
      user_code: payload.userCode ?? null,
      uid: payload.uid ?? null,
      expires_at: expiresIn ? toDbTime(new Date(Date.now() + expiresIn * 1000)) : null,
    };
    await this.#db
      .insertInto('oidc_payloads')
      .values({ model: this.#model, id: this.#rowId(id), consumed_at: null, ...row })
      .onConflict((oc) => oc.columns(['model', 'id']).doUpdateSet(row))
      .execute();
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const payload = await this.#findWhere('id', this.#rowId(id));
    // The value was presented, so it can be given back: oidc-provider consumes and destroys by `jti`.
    return payload && this.#hashed ? { ...payload, jti: id } : payload;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.#findWhere('uid', uid);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.#findWhere('user_code', userCode);
  }

  /**
   * Atomic: a single conditional UPDATE, so two concurrent redemptions of one code or refresh token
   * cannot both pass. The loser is treated exactly like a reuse (RFC 9700 §4.14.2, §4.5.3): the whole
   * grant is revoked and the request fails with invalid_grant.
   */
  async consume(presented: string): Promise<void> {
    const id = this.#rowId(presented);
    const result = await this.#db
      .updateTable('oidc_payloads')
      .set({ consumed_at: toDbTime(new Date()) })
      .where('model', '=', this.#model)
      .where('id', '=', id)
      .where('consumed_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) return;
    const row = await this.#db
      .selectFrom('oidc_payloads')
      .select('grant_id')
      .where('model', '=', this.#model)
      .where('id', '=', id)
      .executeTakeFirst();
    if (row?.grant_id) await revokeGrant(this.#db, row.grant_id);
    throw new errors.InvalidGrant('the token was already used');
  }

  async destroy(id: string): Promise<void> {
    await this.#db
      .deleteFrom('oidc_payloads')
      .where('model', '=', this.#model)
      .where('id', '=', this.#rowId(id))
      .execute();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await revokeGrant(this.#db, grantId);
  }

  async #findWhere(column: 'id' | 'uid' | 'user_code', value: string): Promise<AdapterPayload | undefined> {
    const row = await this.#db
      .selectFrom('oidc_payloads')
      .select(['payload', 'consumed_at', 'expires_at'])
      .where('model', '=', this.#model)
      .where(column, '=', value)
      .executeTakeFirst();
    if (!row) return undefined;
    if (row.expires_at !== null && new Date(row.expires_at).getTime() <= Date.now()) return undefined;
    const payload = JSON.parse(row.payload) as AdapterPayload;
    // oidc-provider reads `consumed` to detect reuse (it then revokes the grant itself).
    return row.consumed_at === null
      ? payload
      : { ...payload, consumed: Math.floor(new Date(row.consumed_at).getTime() / 1000) };
  }
}

function withoutJti(payload: AdapterPayload): AdapterPayload {
  const { jti: _value, ...rest } = payload;
  return rest;
}

/** What dynamic registration (registration.ts) does when oidc-provider stores or removes a client. */
export interface ClientStore {
  upsert(clientId: string, metadata: Record<string, unknown>): Promise<void>;
  destroy(clientId: string): Promise<void>;
}

/**
 * Clients live in oauth_clients, managed with `signet client` and the admin API (clients.service.ts).
 * oidc-provider writes here only for dynamic registration (RFC 7591/7592), when it is on: `store`
 * then keeps the client as an ordinary row, with its secret hashed. Without it, nothing is written.
 */
export class ClientAdapter implements Adapter {
  readonly #db: Kysely<Database>;
  readonly #store: ClientStore | undefined;
  constructor(db: Kysely<Database>, store?: ClientStore) {
    this.#db = db;
    this.#store = store;
  }
  async find(id: string): Promise<AdapterPayload | undefined> {
    return (await findClientMetadata(this.#db, id)) as AdapterPayload | undefined;
  }
  async upsert(id: string, payload: AdapterPayload): Promise<void> {
    if (!this.#store) throw new Error('clients are managed with `signet client` (dynamic registration is off)');
    await this.#store.upsert(id, payload as Record<string, unknown>);
  }
  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
  async consume(): Promise<void> {}
  async destroy(id: string): Promise<void> {
    await this.#store?.destroy(id);
  }
  async revokeByGrantId(): Promise<void> {}
}
