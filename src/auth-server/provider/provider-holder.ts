// Owns the running oidc-provider instance. Keys live in the database; when another process rotates
// them (`signet keys rotate`), every instance notices within KEY_CHECK_INTERVAL_MS and builds a provider
// with the new key set, so all instances sign with the new keys and publish the old ones as well.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type Provider from 'oidc-provider';
import type { Database } from '../../db/schema.ts';
import { auditProviderEvents } from './audit-events.ts';
import { loadKeys, publicJwks, type KeyMaterial } from '../tokens/keys.ts';
import { createProvider, type ProviderSettings } from './provider.ts';

export const KEY_CHECK_INTERVAL_MS = 30_000;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export class ProviderHolder {
  #provider: Provider;
  #handler: Handler;
  #keys: KeyMaterial;
  #publicJwks: ReturnType<typeof publicJwks>;
  readonly #db: Kysely<Database>;
  readonly #settings: ProviderSettings;
  readonly #kek: Buffer | undefined;
  readonly #log: FastifyBaseLogger | undefined;
  /** Told of each token endpoint success, by grant type: the metrics (app.ts) and the hourly counts (plugin.ts). */
  readonly #tokenObservers: ((grantType: unknown) => void)[] = [];

  private constructor(
    db: Kysely<Database>,
    settings: ProviderSettings,
    kek: Buffer | undefined,
    keys: KeyMaterial,
    log: FastifyBaseLogger | undefined,
  ) {
    this.#db = db;
    this.#settings = settings;
    this.#kek = kek;
    this.#log = log;
    this.#keys = keys;
    this.#publicJwks = publicJwks(keys);
    this.#provider = this.#build(keys);
    this.#handler = this.#provider.callback() as Handler;
  }

  static async create(
    db: Kysely<Database>,
    settings: ProviderSettings,
    kek: Buffer | undefined,
    log?: FastifyBaseLogger,
  ): Promise<ProviderHolder> {
    return new ProviderHolder(db, settings, kek, await loadKeys(db, kek, settings.sessionTtlSeconds * 1000), log);
  }

  /**
   * oidc-provider answers a fault with a generic server_error and only emits the cause: log it with the
   * request id the response carries (the design guide: 5xx bodies are generic, details go to the log).
   */
  #build(keys: KeyMaterial): Provider {
    const provider = createProvider(this.#db, keys, this.#settings);
    provider.on(
      'server_error',
      (ctx: { req: IncomingMessage & { id?: string }; method: string; path: string }, err: unknown) => {
        this.#log?.error({ err, reqId: ctx.req.id, method: ctx.method, path: ctx.path }, 'authorization server error');
      },
    );
    // Revoked grants and refresh-token reuse go to the audit trail (docs/security.md, "The audit trail").
    auditProviderEvents(provider, this.#db, (err) => this.#log?.error({ err }, 'audit trail entry not written'));
    // 'grant.success': the token endpoint issued tokens (oidc-provider lib/actions/token.js), for any
    // grant type; the listener looks the observer up when it fires, so a rebuilt provider reports too.
    provider.on('grant.success', (ctx: { oidc: { params?: { grant_type?: unknown } } }) => {
      for (const observer of this.#tokenObservers) observer(ctx.oidc.params?.grant_type);
    });
    return provider;
  }

  /** Reports every successful token endpoint response with its grant_type. */
  observeTokens(observer: (grantType: unknown) => void): void {
    this.#tokenObservers.push(observer);
  }

  get provider(): Provider {
    return this.#provider;
  }

  get handler(): Handler {
    return this.#handler;
  }

  get keys(): KeyMaterial {
    return this.#keys;
  }

  /** The same object until the keys change (the resource server's verifier caches on identity). */
  publicJwks(): ReturnType<typeof publicJwks> {
    return this.#publicJwks;
  }

  /** Rebuilds the provider when the stored key set changed; true when it did. */
  async reloadIfChanged(): Promise<boolean> {
    const keys = await loadKeys(this.#db, this.#kek, this.#settings.sessionTtlSeconds * 1000);
    if (keys.fingerprint === this.#keys.fingerprint) return false;
    const provider = this.#build(keys);
    this.#provider = provider;
    this.#handler = provider.callback() as Handler;
    this.#keys = keys;
    this.#publicJwks = publicJwks(keys);
    return true;
  }
}
