// Verify one Signet webhook delivery with node:crypto only (the Standard Webhooks headers).
//
//   WEBHOOK_SECRET=whsec_…               your endpoint's secret
//   WEBHOOK_ID=dlv_…                     the webhook-id header
//   WEBHOOK_TIMESTAMP=1795300000         the webhook-timestamp header (seconds since the epoch)
//   WEBHOOK_SIGNATURE='v1,… v1,…'        the webhook-signature header
//   node node-crypto.mjs < body.json     the raw body, byte for byte, on stdin
//
// Prints "verified" and exits 0, or prints the reason on stderr and exits 1.
import { createHmac, timingSafeEqual } from 'node:crypto';

const TOLERANCE_SECONDS = 5 * 60; // Signet's contract: reject deliveries older (or newer) than 5 minutes

/** The reason `rawBody` (a Buffer) is not a genuine, fresh delivery, or null when it is. */
function verifyDelivery({ secret, id, timestamp, signature }, rawBody, nowSeconds = Date.now() / 1000) {
  if (!/^\d+$/.test(timestamp ?? '')) return 'webhook-timestamp is missing or not a number';
  // The timestamp is signed with the body: an old delivery replayed later is refused here.
  if (Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) return 'timestamp outside the 5-minute tolerance';
  // The key is the base64 part of the secret, decoded; the signed content is "<id>.<timestamp>.<body>".
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key)
    .update(`${id}.${timestamp}.`)
    .update(rawBody) // the exact bytes received, never re-serialized JSON
    .digest();
  // During a secret rotation the header carries one "v1,<base64>" per active secret: any may match.
  for (const entry of (signature ?? '').split(' ')) {
    const [version, value] = entry.split(',');
    const received = Buffer.from(value ?? '', 'base64');
    // timingSafeEqual needs equal lengths; the length of a signature is no secret.
    if (version === 'v1' && received.length === expected.length && timingSafeEqual(received, expected)) return null;
  }
  return 'no signature matches';
}

// Command line: the headers from the environment, the raw body from stdin.
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { WEBHOOK_SECRET, WEBHOOK_ID, WEBHOOK_TIMESTAMP, WEBHOOK_SIGNATURE } = process.env;
const reason = WEBHOOK_SECRET
  ? verifyDelivery(
      { secret: WEBHOOK_SECRET, id: WEBHOOK_ID, timestamp: WEBHOOK_TIMESTAMP, signature: WEBHOOK_SIGNATURE },
      Buffer.concat(chunks),
    )
  : 'WEBHOOK_SECRET is not set';
if (reason) {
  console.error(`not verified: ${reason}`);
  process.exit(1);
}
console.log('verified');
