// Webhook signing secrets: the format consumers receive, and how they are kept at rest.
// A secret is `whsec_` + base64 of 32 random bytes, the Standard Webhooks / Svix format, so the
// standardwebhooks and svix libraries take it as it is; the GitHub-style HMAC uses the whole string
// as its key, as @octokit/webhooks-methods does.
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { seal, unseal, UnsealError } from '../../db/sealed.ts';

const PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export function generateSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/** Why a consumer-chosen secret is refused, or undefined when it is fine (24 to 64 random bytes, as Svix accepts). */
export function secretProblem(secret: string): string | undefined {
  const body = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : undefined;
  if (body === undefined || !BASE64.test(body) || body.length % 4 !== 0)
    return 'must be "whsec_" followed by standard base64';
  const bytes = Buffer.from(body, 'base64').length;
  if (bytes < 24 || bytes > 64) return `must encode 24 to 64 random bytes (this one has ${bytes})`;
  return undefined;
}

/** The raw key for Standard Webhooks signatures: the base64 part, decoded. */
export function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

/** Seals secrets under the configured key, bound to their endpoint (AES-GCM associated data). */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  seal(endpointId: string, secret: string): string {
    return seal(secret, this.#key, endpointId);
  }

  open(endpointId: string, stored: string): string {
    return unseal(stored, this.#key, endpointId);
  }
}

export class SecretKeyError extends Error {}

/** One secret already sealed in the database: the proof that a key is the right one. */
interface SealedSample {
  endpointId: string;
  sealed: string;
}

/**
 * The configured WEBHOOK_SECRET_KEY; for the embedded SQLite default, a key generated once into a file
 * beside the database (mode 0600), so a copy of the database alone does not reveal the secrets.
 * PostgreSQL deployments share one database across hosts and must configure the key.
 *
 * `sample` is a secret the database already holds (undefined for a database without any). The key must
 * open it: a lost or replaced key would otherwise leave every delivery pending, unsigned, with nothing
 * but a log line to show for it, so it stops the start instead. A key file is generated only for a
 * database that holds no sealed secret yet.
 */
export function resolveSecretKey(configured: Buffer | undefined, databaseUrl: string, sample?: SealedSample): Buffer {
  const { key, file } = findKey(configured, databaseUrl, sample !== undefined);
  if (sample && !opens(key, sample)) {
    throw new SecretKeyError(
      file === undefined
        ? 'WEBHOOK_SECRET_KEY does not open the webhook secrets stored in the database: set it to the key they were sealed with'
        : `the webhook key file ${file} does not open the webhook secrets stored in the database: put back the file this database was used with, or set WEBHOOK_SECRET_KEY to the key they were sealed with`,
    );
  }
  return key;
}

function findKey(
  configured: Buffer | undefined,
  databaseUrl: string,
  sealedSecretsExist: boolean,
): { key: Buffer; file?: string } {
  if (configured) return { key: configured };
  if (!databaseUrl.startsWith('sqlite:')) {
    throw new SecretKeyError(
      'WEBHOOK_SECRET_KEY is required with PostgreSQL: every instance must seal and open webhook secrets with the same key (generate one with `npx signet keys generate-kek`)',
    );
  }
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === ':memory:') return { key: randomBytes(32) }; // a fresh database every time
  const file = `${path}.webhook-key`;
  const existing = readKeyFile(file);
  if (existing) return { key: existing, file };
  if (sealedSecretsExist) {
    throw new SecretKeyError(
      `the webhook key file ${file} is missing, but the database holds webhook secrets sealed with it (a new key would leave every delivery pending): restore the file from the backup of this database, or set WEBHOOK_SECRET_KEY to the key it held; if it is lost, see docs/operations/failure-behaviour.md`,
    );
  }
  return { key: createKeyFile(file), file };
}

function opens(key: Buffer, sample: SealedSample): boolean {
  try {
    unseal(sample.sealed, key, sample.endpointId);
    return true;
  } catch (err) {
    if (err instanceof UnsealError) return false;
    throw err;
  }
}

function readKeyFile(file: string): Buffer | undefined {
  try {
    return decodeKey(readFileSync(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function createKeyFile(file: string): Buffer {
  const key = randomBytes(32);
  try {
    writeFileSync(file, `${key.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
    return key;
  } catch (err) {
    // Another process (a dispatcher started at the same moment) created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return decodeKey(readFileSync(file, 'utf8'), file);
    throw err;
  }
}

function decodeKey(text: string, file: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64url');
  if (key.length !== 32) throw new SecretKeyError(`${file} does not hold a 32-byte base64url key`);
  return key;
}
