// Secrets at rest: AES-256-GCM with a key from configuration. The optional associated data binds a
// sealed value to its row, so a ciphertext copied into another row does not open there.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const SEALED = 'aes256gcm:';

export class UnsealError extends Error {}

export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED);
}

export function seal(plain: string, key: Buffer, associatedData?: string): string {
  const iv = randomBytes(12); // 96-bit random nonce (NIST SP 800-38D §8.2.2)
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `${SEALED}${iv.toString('base64url')}.${sealed.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
}

/** Throws UnsealError when the key (or the associated data) is not the one the value was sealed with. */
export function unseal(stored: string, key: Buffer, associatedData?: string): string {
  const [iv = '', sealed = '', tag = ''] = stored.slice(SEALED.length).split('.');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: 16 }); // full tags only
    if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new UnsealError('the key does not open this sealed value');
  }
}
