// The dispatcher signs every attempt with the endpoint's active secrets. Opening a sealed secret
// (AES-256-GCM) and importing its Standard Webhooks key cost more than signing, so what was opened is
// kept per endpoint for as long as the sealed values in the row stay the same: a rotation changes
// them, and the next attempt opens the new ones.
import type { SecretBox } from '../store/secrets.ts';
import { SigningSecret } from './signing.ts';

interface SealedSecrets {
  endpointId: string;
  sealedSecret: string;
  sealedPreviousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

interface Opened {
  sealedSecret: string;
  sealedPreviousSecret: string | null;
  current: SigningSecret;
  previous: SigningSecret | null;
}

/** Endpoints are few (50 per client); the bound only keeps a pathological registry from growing it forever. */
const MAX_ENDPOINTS = 10_000;

export class OpenedSecrets {
  readonly #box: SecretBox;
  readonly #opened = new Map<string, Opened>();

  constructor(box: SecretBox) {
    this.#box = box;
  }

  /** Newest first: the current secret, then the previous one while its overlap lasts. */
  active(row: SealedSecrets, now: Date): SigningSecret[] {
    const opened = this.#open(row);
    const previousLive = opened.previous && row.previousSecretExpiresAt && row.previousSecretExpiresAt > now;
    return previousLive ? [opened.current, opened.previous!] : [opened.current];
  }

  #open(row: SealedSecrets): Opened {
    const cached = this.#opened.get(row.endpointId);
    if (cached && cached.sealedSecret === row.sealedSecret && cached.sealedPreviousSecret === row.sealedPreviousSecret)
      return cached;
    const opened: Opened = {
      sealedSecret: row.sealedSecret,
      sealedPreviousSecret: row.sealedPreviousSecret,
      current: new SigningSecret(this.#box.open(row.endpointId, row.sealedSecret)),
      previous: row.sealedPreviousSecret
        ? new SigningSecret(this.#box.open(row.endpointId, row.sealedPreviousSecret))
        : null,
    };
    if (this.#opened.size >= MAX_ENDPOINTS) this.#opened.clear();
    this.#opened.set(row.endpointId, opened);
    return opened;
  }
}
