// Owns the running oidc-provider instance. Keys live in the database; when their set or a key's state
// changes (a rotation publishes a pending key, a pending key starts signing: tokens/keys.ts), the holder
// builds a provider with the new key set. key-reloader.ts says when to look: a NOTIFY, a timer at the next
// state change, a poll every KEY_RELOAD_INTERVAL, a token signed with a key this instance does not know.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type Provider from 'oidc-provider';
import type { Database } from '../../db/schema.ts';
import { auditProviderEvents } from './audit-events.ts';
import { loadKeys, publicJwks, type KeyMaterial } from '../tokens/keys.ts';
import { createProvider, type ProviderSettings } from './provider.ts';

/** A token with a `kid` this instance does not hold rereads the keys at most this often (key-reloader.ts). */
export const UNKNOWN_KEY_COOLDOWN_MS = 5000;

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
  /** Told after every reload, changed or not (key-reloader.ts schedules the next state change). */
  readonly #reloadObservers: (() => void)[] = [];
  #inFlight: Promise<boolean> | undefined;
  #queued: Promise<boolean> | undefined;
  #unknownKeyAt = -Infinity;
  /** Injectable for the cooldown's tests. */
  now: () => number = Date.now;

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

  /** Told after every reload, whatever its outcome. */
  observeReloads(observer: () => void): void {
    this.#reloadObservers.push(observer);
  }

  /**
   * Rebuilds the provider when the stored key set, or a key's state, changed; true when it did. Reloads
   * never overlap: one asked for while another runs follows it (the running one may have read the table
   * before the change it was asked for), and a slower, older read can never replace a newer one.
   */
  reloadIfChanged(): Promise<boolean> {
    if (this.#queued) return this.#queued;
    if (!this.#inFlight) {
      this.#inFlight = this.#reload().finally(() => {
        this.#inFlight = undefined;
        for (const observer of this.#reloadObservers) observer();
      });
      return this.#inFlight;
    }
    this.#queued = this.#inFlight
      .catch(() => false)
      .then(() => {
        this.#queued = undefined;
        return this.reloadIfChanged();
      });
    return this.#queued;
  }

  /**
   * For the resource server's verifier (http/bearer/token-verifier.ts): a token of our issuer signed with a
   * key this instance does not hold may reread the keys (another instance may have loaded a rotation first).
   * One reload, shared by every request that meets it, at most once per UNKNOWN_KEY_COOLDOWN_MS: a forged
   * `kid` must not turn requests into database reads.
   */
  readonly unknownKey = {
    allowed: (): boolean => this.#inFlight !== undefined || this.now() >= this.#unknownKeyAt + UNKNOWN_KEY_COOLDOWN_MS,
    reload: async (): Promise<void> => {
      // A reload running now may have read the table before the key was stored: join the one after it.
      if (!this.#inFlight) {
        if (this.now() < this.#unknownKeyAt + UNKNOWN_KEY_COOLDOWN_MS) return;
        this.#unknownKeyAt = this.now();
      }
      await this.reloadIfChanged().catch(() => false); // the keys held keep verifying; the poll retries
    },
  };

  async #reload(): Promise<boolean> {
    const keys = await loadKeys(this.#db, this.#kek, this.#settings.sessionTtlSeconds * 1000);
    if (keys.fingerprint === this.#keys.fingerprint) {
      this.#keys = { ...this.#keys, nextChangeAt: keys.nextChangeAt };
      return false;
    }
    const provider = this.#build(keys);
    this.#provider = provider;
    this.#handler = provider.callback() as Handler;
    this.#keys = keys;
    this.#publicJwks = publicJwks(keys);
    return true;
  }
}
