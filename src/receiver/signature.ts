// Webhook signature verification (docs/guides/producing-webhooks.md, "What a delivery looks like"): HMAC-SHA256 over
// the exact raw body bytes, sent as `sha256=<64 lowercase hex>` (the GitHub format), compared in constant time. Every
// configured secret is tried, so a producer may rotate its secret while old deliveries still arrive.
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureFailure = 'missing' | 'wrong_prefix' | 'malformed' | 'mismatch';
export type SignatureCheck = { ok: true; secretIndex: number } | { ok: false; reason: SignatureFailure };

const PREFIX = 'sha256=';
// Strict: lowercase only. Accepting uppercase would make two different strings valid for one body,
// and docs/guides/producing-webhooks.md fixes the form as sha256=<64 lowercase hex>.
const HEX_DIGEST = /^[0-9a-f]{64}$/;

function hmac(rawBody: Buffer | string, secret: string): Buffer {
  return createHmac('sha256', secret)
    .update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody)
    .digest();
}

/** "sha256=<hex>" for `rawBody`; what a producer sends (used by tests and the demo). */
export function signBody(rawBody: Buffer | string, secret: string): string {
  return `${PREFIX}${hmac(rawBody, secret).toString('hex')}`;
}

export function verifySignature(
  rawBody: Buffer | string,
  header: string | undefined,
  secrets: readonly string[],
): SignatureCheck {
  if (header === undefined || header === '') return { ok: false, reason: 'missing' };
  if (!header.startsWith(PREFIX)) return { ok: false, reason: 'wrong_prefix' };
  const hex = header.slice(PREFIX.length);
  if (!HEX_DIGEST.test(hex)) return { ok: false, reason: 'malformed' };
  // Both buffers are 32 bytes, as timingSafeEqual requires. Stopping at the first match reveals only
  // which secret matched, not anything about the expected digest.
  const received = Buffer.from(hex, 'hex');
  for (const [index, secret] of secrets.entries()) {
    if (timingSafeEqual(received, hmac(rawBody, secret))) return { ok: true, secretIndex: index };
  }
  return { ok: false, reason: 'mismatch' };
}
