// Opaque pagination cursors: base64url (RFC 4648 §5, unpadded) of compact JSON.
// Opaque to clients, not secret or tamper-proof: the decoded values must be treated as untrusted input.
import { TextDecoder } from 'node:util';
import type { FastifyRequest } from 'fastify';
import { Problem } from '../problems/problems.ts';

type CursorShape = Record<string, 'string' | 'number'>;
export type CursorPayload = Record<string, string | number>;

/** Bounds the work done on attacker-supplied input before anything is decoded. */
export const MAX_CURSOR_LENGTH = 512;

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function encodeCursor(payload: CursorPayload): string {
  for (const value of Object.values(payload)) {
    // JSON would turn NaN/Infinity into null, which could never decode back against a 'number' shape.
    if (typeof value === 'number' && !Number.isFinite(value)) throw new RangeError('encodeCursor: non-finite number');
  }
  return Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
}

/** Strict base64url: Buffer's decoder silently skips bad characters, so demand the canonical encoding back. */
function decodeBase64url(cursor: string): Buffer | null {
  if (cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) return null;
  const bytes = Buffer.from(cursor, 'base64url');
  return bytes.toString('base64url') === cursor ? bytes : null;
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined; // invalid UTF-8 or JSON
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Exactly the keys of `shape`, each of the declared type; a fresh object so no parsed key leaks through. */
function matchShape(value: Record<string, unknown>, shape: CursorShape): CursorPayload | null {
  const keys = Object.keys(shape);
  if (Object.keys(value).length !== keys.length) return null;
  const result: CursorPayload = {};
  for (const key of keys) {
    const field = Object.hasOwn(value, key) ? value[key] : undefined;
    if (typeof field !== shape[key]) return null;
    if (typeof field === 'number' && !Number.isFinite(field)) return null; // e.g. 1e999 parses to Infinity
    result[key] = field as string | number;
  }
  return result;
}

/** Null for anything that is not a cursor of this shape; the caller answers 400. */
export function decodeCursor(cursor: string, shape: CursorShape): CursorPayload | null {
  const bytes = decodeBase64url(cursor);
  if (bytes === null) return null;
  const value = parseJson(bytes);
  return isPlainObject(value) ? matchShape(value, shape) : null;
}

/**
 * `limit` in decimal digits only: query strings are coerced with Number(), which also reads `0x10`,
 * `1e2` or ` 5`. Runs before the schema coerces it.
 */
export async function requireDecimalLimit(request: FastifyRequest): Promise<void> {
  const { limit } = request.query as { limit?: unknown };
  if (typeof limit === 'string' && !/^\d+$/.test(limit)) {
    throw new Problem('invalidParameter', 'limit must be written in decimal digits', {
      errors: [{ pointer: '/limit', detail: 'decimal digits only' }],
    });
  }
}
