// Random hex for ids (newId, the delivery-id seed of a one-statement create). crypto.randomBytes asks
// OpenSSL for each call: 2.5 µs for 10 bytes, against 0.2 µs taken from a pool filled 4 KB at a time
// (~12 µs of a create with its deliveries,
// docs/benchmarks-history.md, "Time-ordered ids"). The pool is the same CSPRNG's output, and no byte
// is handed out twice; node:crypto's randomUUID keeps such a cache for the same reason.
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

/** `bytes` random bytes (1 to 4096) as 2 × `bytes` lower-case hex digits. */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES)
    throw new RangeError(`1 to ${POOL_BYTES} random bytes at a time, not ${bytes}`);
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}
