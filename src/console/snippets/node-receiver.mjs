// Verify one Signet webhook delivery with the receiver kit, `signet/receiver`.
//
//   WEBHOOK_SECRET=whsec_…              your endpoint's secret; during a rotation "whsec_new,whsec_old"
//   WEBHOOK_SIGNATURE_256='sha256=…'    the X-Service-Signature-256 header
//   node node-receiver.mjs < body.json  the raw body, byte for byte, on stdin
//
// Prints "verified" and exits 0, or prints the reason on stderr and exits 1.
// In a server, prefer the kit's receiverPlugin or createWebhookHandler: they also check the
// delivery id and event type, deduplicate, and store the event in an inbox.
import { verifySignature } from 'signet/receiver';

const TOLERANCE_MS = 5 * 60 * 1000; // Signet's contract: reject deliveries older (or newer) than 5 minutes

function fail(reason) {
  console.error(`not verified: ${reason}`);
  process.exit(1);
}

const secrets = (process.env.WEBHOOK_SECRET ?? '').split(',').filter(Boolean);
if (secrets.length === 0) fail('WEBHOOK_SECRET is not set');

// Verify the exact bytes received: re-serialized JSON would not match the signature.
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const rawBody = Buffer.concat(chunks);

// HMAC-SHA256 of the body, compared in constant time against each secret (newest first).
const check = verifySignature(rawBody, process.env.WEBHOOK_SIGNATURE_256, secrets);
if (!check.ok) fail(`signature ${check.reason}`);

// The body's Timestamp is the time of this attempt and is covered by the signature: it stops replays.
const sentAt = Date.parse(JSON.parse(rawBody.toString('utf8')).Timestamp);
if (!(Math.abs(Date.now() - sentAt) <= TOLERANCE_MS)) fail('timestamp outside the 5-minute tolerance');

console.log('verified');
