// Precompressed static bodies (the console's files, /openapi.json): each body is compressed once, with
// gzip and brotli at their best settings, and a request picks a variant by Accept-Encoding (RFC 9110
// §12.5.3). Only these fixed bodies are compressed: the API's responses are not (its benchmarks and its
// ETags, which name one representation, stay as they are).
import { createHash } from 'node:crypto';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import vary from 'vary';
import { parseEntityTagList } from './conditional.ts';

export type Coding = 'br' | 'gzip' | 'identity';

export interface Variant {
  coding: Coding;
  body: Buffer;
  /** Strong and distinct per coding: each coded form is a representation of its own (RFC 9110 §8.8.3). */
  etag: string;
}

export interface Encoded {
  variants: Readonly<Partial<Record<Coding, Variant>>> & { identity: Variant };
}

/** Preference when the client weighs codings equally: brotli is smaller than gzip on text. */
const PREFERENCE: readonly Coding[] = ['br', 'gzip', 'identity'];

/**
 * Brotli's best quality (11) costs about 1.5 s a megabyte; above this size quality 9 (a few ms) keeps the
 * first request of /openapi.json (700 KB) fast, still far smaller than gzip.
 */
const BEST_QUALITY_LIMIT = 256 * 1024;

/** Bodies already compressed in this process, by content: a server restarted in-process (the tests) reuses them. */
const memo = new Map<string, Encoded>();
const MEMO_LIMIT = 256;

/** The identity body and, where they are smaller, its gzip and brotli forms. */
export function precompress(body: Buffer): Encoded {
  const key = createHash('sha256').update(body).digest('base64url');
  const known = memo.get(key);
  if (known) return known;
  const identity: Variant = { coding: 'identity', body, etag: `"${key.slice(0, 27)}"` };
  const variants: Encoded['variants'] & Partial<Record<Coding, Variant>> = { identity };
  const gzip = gzipSync(body, { level: 9 });
  if (gzip.length < body.length) variants.gzip = { coding: 'gzip', body: gzip, etag: `"${key.slice(0, 27)}-gz"` };
  const quality = body.length <= BEST_QUALITY_LIMIT ? 11 : 9;
  const br = brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
  });
  if (br.length < body.length) variants.br = { coding: 'br', body: br, etag: `"${key.slice(0, 27)}-br"` };
  const encoded = { variants };
  if (memo.size >= MEMO_LIMIT) memo.delete(memo.keys().next().value!);
  memo.set(key, encoded);
  return encoded;
}

/**
 * Each coding's qvalue from Accept-Encoding; `*` covers the codings not named (RFC 9110 §12.5.3). Ours, not
 * @fastify/accept-negotiator 2.1: that one matches codings and `q` case-sensitively (`GZIP`, `gzip;Q=1` get
 * nothing, where §12.5.3 and §12.4.2 say case-insensitive), knows no `x-gzip` (§8.4.1.3), and lets `*` grant a
 * coding the header refused by name (`br;q=0, *` gets br). test/http/encodings.test.ts holds those cases.
 */
function weights(acceptEncoding: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const item of acceptEncoding.split(',')) {
    const [name, ...params] = item.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    map.set(name.trim() === 'x-gzip' ? 'gzip' : name.trim(), Number.isFinite(weight) ? weight : 0);
  }
  return map;
}

/**
 * The coding to send. No Accept-Encoding: identity (§12.5.3 allows any, but identity is the safe
 * choice). When every coding is refused, identity included (`identity;q=0`), identity is still sent
 * rather than a 406, as §12.5.3 permits.
 */
export function chooseCoding(acceptEncoding: string | undefined, available: readonly Coding[]): Coding {
  if (!acceptEncoding) return 'identity';
  const w = weights(acceptEncoding);
  // identity not named is acceptable (§12.5.3) but weighs least (0.001, the smallest qvalue, §12.4.2):
  // `gzip;q=0.5` still gets gzip. Ties go to PREFERENCE's order.
  const weightOf = (coding: Coding) => w.get(coding) ?? w.get('*') ?? (coding === 'identity' ? 0.001 : 0);
  let best: Coding = 'identity';
  let bestWeight = 0;
  for (const coding of PREFERENCE) {
    if (!available.includes(coding)) continue;
    const weight = weightOf(coding);
    if (weight > bestWeight) [best, bestWeight] = [coding, weight];
  }
  return best;
}

/** The variant for a request's Accept-Encoding. */
function pickVariant(encoded: Encoded, acceptEncoding: string | undefined): Variant {
  const available = Object.keys(encoded.variants) as Coding[];
  return encoded.variants[chooseCoding(acceptEncoding, available)] ?? encoded.variants.identity;
}

/** If-None-Match names this variant's tag or is `*` (RFC 9110 §13.1.2: weak comparison). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const list = parseEntityTagList(ifNoneMatch);
  if (list === null) return false;
  return list.any || list.tags.some((t) => t.tag === etag);
}

interface EncodedHeaders {
  contentType: string;
  cacheControl?: string;
}

/** Adds `field` to Vary, keeping what another hook put there (CORS's `Origin`): RFC 9110 §12.5.5. */
function appendVary(reply: FastifyReply, field: string): void {
  const current = reply.getHeader('vary');
  reply.header('vary', vary.append(Array.isArray(current) ? current.join(', ') : String(current ?? ''), field));
}

/**
 * Sends the variant the request accepts, with `Vary: Accept-Encoding` (RFC 9110 §12.5.5) on every answer,
 * 304 included, so a cache keeps the codings apart; 304 when If-None-Match names the chosen variant.
 */
export function sendEncoded(
  request: FastifyRequest,
  reply: FastifyReply,
  encoded: Encoded,
  headers: EncodedHeaders,
): FastifyReply {
  const variant = pickVariant(encoded, request.headers['accept-encoding']);
  appendVary(reply, 'accept-encoding');
  reply.header('etag', variant.etag);
  if (headers.cacheControl) reply.header('cache-control', headers.cacheControl);
  if (matches(request.headers['if-none-match'], variant.etag)) return reply.code(304).send();
  if (variant.coding !== 'identity') reply.header('content-encoding', variant.coding);
  return reply.header('content-type', headers.contentType).send(variant.body);
}
