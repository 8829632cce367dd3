// Values crossing the database boundary. SQLite stores times as ISO 8601 text (lexically sortable),
// PostgreSQL as timestamptz (returned as Date by pg); both come back as Date here.
import type { DbTime } from './schema.ts';

export function toDbTime(date: Date): string {
  return date.toISOString();
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
