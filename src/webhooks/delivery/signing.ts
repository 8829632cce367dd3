// What one delivery attempt sends: the body, serialized afresh for the attempt with its own
// Timestamp, and the signature headers over those exact bytes.
//   X-<Name>-Signature-256: sha256=<hex>   GitHub style, HMAC-SHA256 keyed with the newest secret
//   webhook-id / webhook-timestamp / webhook-signature: Standard Webhooks, one `v1,` per active secret
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { standardWebhooksKey } from '../store/secrets.ts';

interface EventEnvelope {
  id: string;
  type: string;
  occurredAt: Date;
  /** The event's Data, as the JSON text stored in the outbox. */
  dataJson: string;
}

/**
 * `{"Id","Type","OccurredAtUtc","Timestamp","Data"}`. The timestamp is the attempt's, inside the signed
 * bytes (docs/guides/producing-webhooks.md, "What a delivery looks like"), so a retry hours later is still fresh;
 * OccurredAtUtc never changes.
 */
export function deliveryBody(event: EventEnvelope, attemptAt: Date): string {
  const timestamp = bodyTimestamp(event.occurredAt, attemptAt).toISOString();
  return `{"Id":${JSON.stringify(event.id)},"Type":${JSON.stringify(event.type)},"OccurredAtUtc":${JSON.stringify(event.occurredAt.toISOString())},"Timestamp":${JSON.stringify(timestamp)},"Data":${event.dataJson}}`;
}

/**
 * The body's Timestamp: the attempt time to the millisecond, like OccurredAtUtc (ISO 8601 with
 * milliseconds, docs/guides/producing-webhooks.md, "What a delivery looks like"), and never before the event. Cut to
 * the whole second, an attempt in the event's own second would claim to be older than the event; and a clock
 * stepped back (NTP) between the event's commit and the attempt must not make it so either.
 */
export function bodyTimestamp(occurredAt: Date, attemptAt: Date): Date {
  return new Date(Math.max(occurredAt.getTime(), attemptAt.getTime()));
}

interface SignatureInput {
  headerName: string;
  deliveryId: string;
  eventType: string;
  body: string;
  attemptAt: Date;
  /** Newest first: the current secret, then a previous one still inside its overlap. */
  secrets: readonly SigningSecret[];
}

/**
 * An endpoint's secret, ready to sign with: the Standard Webhooks key is the base64-decoded secret, and
 * importing that buffer costs more than the HMAC itself, so it is imported once per secret.
 */
export class SigningSecret {
  readonly text: string;
  readonly standardKey: KeyObject;

  constructor(text: string) {
    this.text = text;
    this.standardKey = createSecretKey(standardWebhooksKey(text));
  }
}

export function githubSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** Standard Webhooks: base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` keyed with the decoded secret. */
export function standardSignature(
  secret: string | SigningSecret,
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const key = typeof secret === 'string' ? standardWebhooksKey(secret) : secret.standardKey;
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64')}`;
}

export function signatureHeaders(input: SignatureInput): Record<string, string> {
  // Standard Webhooks requires webhook-timestamp in integer seconds since the epoch; only the body's
  // Timestamp carries milliseconds.
  const seconds = Math.floor(input.attemptAt.getTime() / 1000);
  const [newest] = input.secrets;
  if (newest === undefined) throw new Error('an endpoint always has a secret');
  return {
    [`X-${input.headerName}-Signature-256`]: githubSignature(newest.text, input.body),
    [`X-${input.headerName}-Delivery`]: input.deliveryId,
    [`X-${input.headerName}-Event`]: input.eventType,
    'webhook-id': input.deliveryId,
    'webhook-timestamp': String(seconds),
    'webhook-signature': input.secrets
      .map((s) => standardSignature(s, input.deliveryId, seconds, input.body))
      .join(' '),
  };
}
