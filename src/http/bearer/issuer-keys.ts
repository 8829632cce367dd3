// The token issuer's signing keys, fetched over HTTP (OIDC discovery, then `jwks_uri`, or AUTH_JWKS_URL),
// with limits so that a down or slow issuer cannot turn traffic into outbound requests:
// - one fetch in flight at a time, shared by every request that waits for keys;
// - after a failed fetch none until a backoff has passed (1 s, doubling up to 30 s); meanwhile requests
//   that need keys fail at once with 503 and the remaining wait as Retry-After;
// - a token whose `kid` is not in the set refetches it at most once per cooldown (30 s);
// - keys older than 10 min are refreshed in the background, and keep verifying until that succeeds.
// jose's createRemoteJWKSet shares a fetch in flight but keeps no memory of a failure (every request
// after a failed fetch fetches again), and once its cache is stale it fails every token while the issuer
// is down; so the fetching is ours, and jose's createLocalJWKSet still picks the key.
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';

/** The keys could not be fetched (now, or during the backoff after a failure). */
export class IssuerUnavailable extends Error {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number, options?: ErrorOptions) {
    super('the token issuer is unavailable', options);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Thrown by `atHand` when only a fetch can tell whether the token's key exists. */
export class KeysNotAtHand extends Error {}

export interface RemoteKeySettings {
  issuer: string;
  /** Else the `jwks_uri` of the issuer's metadata. */
  jwksUrl: string | undefined;
  fetchTimeoutMs?: number;
  cooldownMs?: number;
  maxAgeMs?: number;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Told of the first failure in a row and of the recovery (for the log). */
  onStateChange?: (state: 'failing' | 'recovered', error?: unknown) => void;
  now?: () => number;
}

type LocalKeySet = ReturnType<typeof createLocalJWKSet>;

export class RemoteKeySet {
  readonly #settings: Required<Omit<RemoteKeySettings, 'jwksUrl' | 'onStateChange'>> & RemoteKeySettings;
  #jwksUri: string | undefined;
  #keys: LocalKeySet | undefined;
  #loadedAt = 0;
  #attemptedAt = -Infinity;
  #inFlight: Promise<void> | undefined;
  #failures = 0;
  #retryAt = 0;

  constructor(settings: RemoteKeySettings) {
    this.#settings = {
      fetchTimeoutMs: 5000,
      cooldownMs: 30_000,
      maxAgeMs: 600_000,
      minBackoffMs: 1000,
      maxBackoffMs: 30_000,
      now: Date.now,
      ...settings,
    };
    this.#jwksUri = settings.jwksUrl;
  }

  /** The key from the keys held; throws KeysNotAtHand when a fetch is needed and allowed. Never waits for a fetch. */
  readonly atHand: JWTVerifyGetKey = async (header, token) => {
    const keys = this.#keys;
    if (!keys) throw this.#fetchAllowed() ? new KeysNotAtHand() : this.#unavailable();
    this.#refreshIfStale();
    try {
      return await keys(header, token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey) || !this.#refetchAllowed()) throw this.#unknownKid(err);
      throw new KeysNotAtHand();
    }
  };

  /** The key, fetching the set first when it is missing or lacks the token's `kid` (within the limits above). */
  readonly resolve: JWTVerifyGetKey = async (header, token) => {
    if (!this.#keys) await this.#refresh();
    else this.#refreshIfStale();
    try {
      return await this.#keys!(header, token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey) || !this.#refetchAllowed()) throw this.#unknownKid(err);
      await this.#refresh();
      return this.#keys!(header, token);
    }
  };

  #now(): number {
    return this.#settings.now();
  }

  #fetchAllowed(): boolean {
    return this.#inFlight !== undefined || this.#now() >= this.#retryAt;
  }

  #refetchAllowed(): boolean {
    return (
      this.#inFlight !== undefined ||
      (this.#now() >= this.#attemptedAt + this.#settings.cooldownMs && this.#fetchAllowed())
    );
  }

  /** No key for the `kid`: the set was checked within the cooldown (a 401), or could not be (the issuer is down). */
  #unknownKid(err: unknown): unknown {
    return err instanceof joseErrors.JWKSNoMatchingKey && this.#failures > 0 ? this.#unavailable(err) : err;
  }

  #unavailable(cause?: unknown): IssuerUnavailable {
    return new IssuerUnavailable(Math.max(1, Math.ceil((this.#retryAt - this.#now()) / 1000)), { cause });
  }

  #refreshIfStale(): void {
    if (
      this.#now() - this.#loadedAt >= this.#settings.maxAgeMs &&
      this.#inFlight === undefined &&
      this.#now() >= this.#retryAt
    ) {
      this.#refresh().catch(() => undefined); // the keys held keep verifying; the failure is in the backoff state
    }
  }

  /**
   * Fetches the key set. While the issuer is known to be failing, a retry runs in the background and the
   * caller gets IssuerUnavailable at once: no request waits up to the fetch timeout on a probably dead issuer.
   */
  #refresh(): Promise<void> {
    const failing = this.#failures > 0;
    if (this.#inFlight) return failing ? Promise.reject(this.#unavailable()) : this.#inFlight;
    if (this.#now() < this.#retryAt) return Promise.reject(this.#unavailable());
    this.#attemptedAt = this.#now();
    const attempt = this.#fetchKeys()
      .then(
        (keys) => {
          this.#keys = keys;
          this.#loadedAt = this.#now();
          if (this.#failures > 0) this.#settings.onStateChange?.('recovered');
          this.#failures = 0;
          this.#retryAt = 0;
        },
        (err: unknown) => {
          this.#failures++;
          const { minBackoffMs, maxBackoffMs } = this.#settings;
          this.#retryAt = this.#now() + Math.min(maxBackoffMs, minBackoffMs * 2 ** (this.#failures - 1));
          if (this.#failures === 1) this.#settings.onStateChange?.('failing', err);
          throw this.#unavailable(err);
        },
      )
      .finally(() => {
        this.#inFlight = undefined;
      });
    this.#inFlight = attempt;
    if (!failing) return attempt;
    attempt.catch(() => undefined);
    return Promise.reject(this.#unavailable());
  }

  async #fetchKeys(): Promise<LocalKeySet> {
    this.#jwksUri ??= await this.#discoverJwksUri();
    try {
      return createLocalJWKSet((await this.#getJson(this.#jwksUri, 'manual')) as JSONWebKeySet);
    } catch (err) {
      if (!this.#settings.jwksUrl) this.#jwksUri = undefined; // discover again next time: it may have moved
      throw err;
    }
  }

  /** OpenID Connect Discovery 1.0 §4, then RFC 8414 metadata; an issuer that is down is asked once, not twice. */
  async #discoverJwksUri(): Promise<string> {
    const { issuer } = this.#settings;
    for (const url of [`${issuer}/.well-known/openid-configuration`, authorizationServerMetadataUrl(issuer)]) {
      const metadata = (await this.#getJson(url, 'follow').catch((err: unknown) => {
        if (err instanceof HttpStatusError && err.status < 500) return undefined; // not published here: try the next
        throw err;
      })) as { issuer?: unknown; jwks_uri?: unknown } | undefined;
      if (metadata?.issuer === issuer && typeof metadata.jwks_uri === 'string') return metadata.jwks_uri;
    }
    throw new Error(`issuer discovery found no metadata with a jwks_uri for ${issuer}`);
  }

  async #getJson(url: string, redirect: 'manual' | 'follow'): Promise<unknown> {
    const response = await fetch(url, {
      redirect,
      signal: AbortSignal.timeout(this.#settings.fetchTimeoutMs),
      headers: { accept: 'application/json' },
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new HttpStatusError(url, response.status);
    }
    return response.json();
  }
}

class HttpStatusError extends Error {
  readonly status: number;
  constructor(url: string, status: number) {
    super(`${url} answered ${status}`);
    this.status = status;
  }
}

/** RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path. */
function authorizationServerMetadataUrl(issuer: string): string {
  const url = new URL(issuer);
  return `${url.origin}/.well-known/oauth-authorization-server${url.pathname === '/' ? '' : url.pathname}`;
}
