// Values crossing the database boundary. SQLite stores times as ISO 8601 text (lexically sortable),
// PostgreSQL as timestamptz (returned as Date by pg); both come back as Date here.
import type { DbTime } from './schema.ts';

export function toDbTime(date: Date): string {
  return date.toISOString();
}

/** Years 1 to 9999: what both databases store (PostgreSQL refuses year 0 and the ±YYYYYY forms beyond). */
export const EARLIEST_STORABLE_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

/** False for NaN too: ajv's date-time takes a leap second (`23:59:60`), which Date cannot represent. */
export function isStorableTime(ms: number): boolean {
  return ms >= EARLIEST_STORABLE_MS && ms <= LATEST;
}

export function fromDbTime(value: DbTime): Date {
  return value instanceof Date ? value : new Date(value);
}

export function toDbJson(value: unknown): string {
  return JSON.stringify(value);
}

export function fromDbJson<T>(value: string | null): T | null {
  return value === null ? null : (JSON.parse(value) as T);
}
