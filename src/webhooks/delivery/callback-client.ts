// One HTTP attempt: POST the signed body to the callback URL through a keep-alive pool whose
// connections only reach allowed addresses. Never follows redirects (undici's request does not unless
// told to); any non-2xx is a failure to retry. Returns what the delivery log records.
import { Agent, request, type Dispatcher } from 'undici';
import { AddressPolicy, guardedLookup, literalAddressProblem } from './address-policy.ts';
import { parseRetryAfter } from './retry-policy.ts';

const EXCERPT_BYTES = 4096;
/** Read (and discard) at most this much of a response, so the connection can be reused. */
const DRAIN_LIMIT_BYTES = 64 * 1024;

export type ErrorKind = 'timeout' | 'connection' | 'dns' | 'refused_address' | 'tls' | 'redirect' | 'status';

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  errorKind: ErrorKind | null;
  errorDetail: string | null;
  responseExcerpt: string | null;
  /** 429/503 with Retry-After. */
  retryAfterMs: number | undefined;
  /** 410 Gone: the receiver asks never to be called again. */
  gone: boolean;
}

/** What the dispatcher sends attempts through: a CallbackClient here, or one on a worker thread (sender-thread.ts). */
export interface AttemptSender {
  post(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult>;
  close(): Promise<void>;
}

export interface CallbackClientSettings {
  timeoutMs: number;
  connectionsPerOrigin: number;
  policy: AddressPolicy;
  userAgent: string;
}

/** Bounds the per-URL memo of the literal-address check (URLs are few: 50 endpoints per client). */
const MAX_CHECKED_URLS = 10_000;

export class CallbackClient implements AttemptSender {
  readonly #agent: Agent;
  readonly #settings: CallbackClientSettings;
  /** URL → why it is refused (or null): parsing a URL costs more than signing, and the answer never changes. */
  readonly #refusals = new Map<string, string | null>();

  constructor(settings: CallbackClientSettings) {
    this.#settings = settings;
    this.#agent = new Agent({
      connections: settings.connectionsPerOrigin,
      keepAliveTimeout: 30_000,
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
      connect: { timeout: settings.timeoutMs, lookup: guardedLookup(settings.policy) } as Agent.Options['connect'],
    });
  }

  async post(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const refused = this.#refusal(url);
    if (refused) return failure('refused_address', refused, elapsed());
    try {
      const response = await request(url, {
        method: 'POST',
        dispatcher: this.#agent,
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': this.#settings.userAgent },
        body,
        signal: AbortSignal.timeout(this.#settings.timeoutMs),
      });
      const excerpt = await readExcerpt(response.body);
      return fromStatus(response, excerpt, elapsed());
    } catch (err) {
      return failure(...classify(err), elapsed());
    }
  }

  /** A literal address outside the allowed networks; host names are checked when they are resolved (guardedLookup). */
  #refusal(url: string): string | null {
    let refusal = this.#refusals.get(url);
    if (refusal === undefined) {
      refusal = literalAddressProblem(new URL(url), this.#settings.policy) ?? null;
      if (this.#refusals.size >= MAX_CHECKED_URLS) this.#refusals.clear();
      this.#refusals.set(url, refusal);
    }
    return refusal;
  }

  /** Called after the dispatcher's grace period: whatever is still in flight is aborted (its lease was released). */
  async close(): Promise<void> {
    await this.#agent.destroy();
  }
}

/** The statuses that redirect (RFC 9110 §15.4); 304 Not Modified and the rest of 3xx are just failures. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function fromStatus(response: Dispatcher.ResponseData, excerpt: string, durationMs: number): AttemptResult {
  const status = response.statusCode;
  const ok = status >= 200 && status < 300;
  const kind: ErrorKind | null = ok ? null : REDIRECTS.has(status) ? 'redirect' : 'status';
  const retryAfterMs =
    status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after'], new Date()) : undefined;
  const detail =
    kind === 'redirect'
      ? `redirect to ${String(response.headers.location ?? '(no location)')} not followed`
      : kind
        ? `HTTP ${status}`
        : null;
  return {
    ok,
    statusCode: status,
    durationMs,
    errorKind: kind,
    errorDetail: detail && storableText(detail),
    responseExcerpt: storableText(excerpt),
    retryAfterMs,
    gone: status === 410,
  };
}

function failure(kind: ErrorKind, detail: string, durationMs: number): AttemptResult {
  return {
    ok: false,
    statusCode: null,
    durationMs,
    errorKind: kind,
    errorDetail: storableText(detail),
    responseExcerpt: null,
    retryAfterMs: undefined,
    gone: false,
  };
}

/**
 * What the receiver sent (its body, its Location) is arbitrary text, and PostgreSQL refuses U+0000 in
 * text and jsonb, and lone surrogates in jsonb (the batched outcomes travel as one jsonb parameter):
 * one such reply made a whole batch unrecordable. Both become U+FFFD, as undecodable bytes already do.
 */
export function storableText(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\uFFFD');
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME']);
/**
 * What a failed connection says to the endpoint's owner. Node's own messages name the address the host
 * resolved to (`connect ECONNREFUSED 10.1.2.3:443`): an answer of this network's resolver, which the
 * attempt log and the portal must not show (docs/security.md), so only the code and its meaning are kept.
 */
const CONNECTION_MEANINGS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the peer',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed while sending',
  UND_ERR_SOCKET: 'connection closed before the response',
  UND_ERR_CLOSED: 'connection closed before the response',
};

function classify(err: unknown): [ErrorKind, string] {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code ?? '';
  const message = e.message ?? String(err);
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || TIMEOUT_CODES.has(code))
    return ['timeout', 'no response within the delivery timeout'];
  if (code === 'ESSRF') return ['refused_address', message];
  if (DNS_CODES.has(code)) return ['dns', `host not found (${code})`];
  if (/CERT|TLS|SSL/i.test(code)) return ['tls', `TLS: ${code}`];
  return ['connection', code ? `${CONNECTION_MEANINGS[code] ?? 'connection failed'} (${code})` : 'connection failed'];
}

/**
 * The first EXCERPT_BYTES of the reply, for the attempt log. The status line has already decided the
 * outcome (docs/guides/producing-webhooks.md, "What a delivery looks like": any 2xx acknowledges), so a body that is
 * slow (the timeout aborts it) or cut off only shortens the excerpt: failing the attempt would send the delivery again.
 */
async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const parts: Buffer[] = [];
  let kept = 0;
  let read = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (kept < EXCERPT_BYTES) {
        const part = chunk.subarray(0, EXCERPT_BYTES - kept);
        parts.push(part);
        kept += part.length;
      }
      read += chunk.length;
      if (read > DRAIN_LIMIT_BYTES) {
        body.destroy();
        break;
      }
    }
  } catch {
    body.destroy(); // aborted by the timeout, or the connection dropped: keep what arrived
  }
  // A cut may split a UTF-8 sequence; the decoder replaces the partial character.
  return new TextDecoder().decode(Buffer.concat(parts));
}
