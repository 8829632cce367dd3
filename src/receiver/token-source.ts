// A client-credentials access token for the producer's event list API, found by discovery rather
// than configured: the resource's metadata (RFC 9728) names its authorization server, whose OpenID
// Provider metadata (OpenID Connect Discovery 1.0 §4) names the token endpoint.
import { request } from 'undici';

export interface TokenSourceOptions {
  from: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  now?: () => number;
}

interface Discovered {
  resource: string;
  tokenEndpoint: string;
}

// Refresh a little before expiry, so a token never expires between being read and being used.
const EXPIRY_MARGIN_MS = 30_000;

async function getJson(url: string): Promise<Record<string, unknown>> {
  const response = await request(url, { headers: { accept: 'application/json' } });
  const body = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`GET ${url} answered ${response.statusCode}`);
  const parsed = JSON.parse(body) as unknown;
  if (typeof parsed !== 'object' || parsed === null) throw new Error(`GET ${url} did not answer a JSON object`);
  return parsed as Record<string, unknown>;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

export async function discover(from: string): Promise<Discovered> {
  const resourceUrl = `${trimSlash(from)}/.well-known/oauth-protected-resource`;
  const metadata = await getJson(resourceUrl);
  const [issuer] = Array.isArray(metadata.authorization_servers) ? metadata.authorization_servers : [];
  if (typeof metadata.resource !== 'string' || typeof issuer !== 'string')
    throw new Error(`${resourceUrl}: no resource or authorization_servers`);
  const configuration = await getJson(`${trimSlash(issuer)}/.well-known/openid-configuration`);
  // OpenID Connect Discovery §4.3: the issuer in the document must be the one asked for (mix-up defence).
  if (configuration.issuer !== issuer)
    throw new Error(
      `the authorization server's metadata names issuer ${String(configuration.issuer)}, expected ${issuer}`,
    );
  if (typeof configuration.token_endpoint !== 'string') throw new Error(`${issuer}: no token_endpoint in its metadata`);
  return { resource: metadata.resource, tokenEndpoint: configuration.token_endpoint };
}

/** RFC 6749 §2.3.1: client id and secret are form-urlencoded before they are joined for Basic. */
function basicAuth(clientId: string, clientSecret: string): string {
  const encode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

export class TokenSource {
  readonly #options: TokenSourceOptions;
  readonly #now: () => number;
  #discovered: Discovered | undefined;
  #token: { value: string; refreshAt: number } | undefined;

  constructor(options: TokenSourceOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  async token(): Promise<string> {
    if (this.#token && this.#now() < this.#token.refreshAt) return this.#token.value;
    this.#discovered ??= await discover(this.#options.from);
    this.#token = await this.#requestToken(this.#discovered);
    return this.#token.value;
  }

  /** After a 401: the token was revoked or the keys rotated; the next call fetches a new one. */
  invalidate(): void {
    this.#token = undefined;
  }

  async #requestToken({ tokenEndpoint, resource }: Discovered): Promise<{ value: string; refreshAt: number }> {
    // RFC 8707: `resource` asks for a token whose audience is the events API.
    const form = new URLSearchParams({ grant_type: 'client_credentials', scope: this.#options.scope, resource });
    const response = await request(tokenEndpoint, {
      method: 'POST',
      headers: {
        authorization: basicAuth(this.#options.clientId, this.#options.clientSecret),
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
    });
    const body = JSON.parse(await response.body.text()) as Record<string, unknown>;
    // RFC 6749 §5.2: the error code is safe to report; the response never contains our secret.
    if (response.statusCode !== 200)
      throw new Error(`token endpoint answered ${response.statusCode} ${String(body.error ?? '')}`.trim());
    if (typeof body.access_token !== 'string') throw new Error('token endpoint answered without an access_token');
    const lifetimeMs = typeof body.expires_in === 'number' ? body.expires_in * 1000 : 0;
    return { value: body.access_token, refreshAt: this.#now() + Math.max(0, lifetimeMs - EXPIRY_MARGIN_MS) };
  }
}
