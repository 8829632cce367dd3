// Query values the admin API's lists and charts share (docs/guides/admin-api.md): time bounds, windows and
// keyset cursors. Unsigned cursors are untrusted input, checked before they reach SQL.
import { EARLIEST_STORABLE_MS, isStorableTime } from '../../db/codecs.ts';
import { decodeCursor } from '../representation/cursor.ts';
import { Problem } from '../problems/problems.ts';
import { hasControlCharacter } from '../problems/validation.ts';

const HOUR_MS = 3600 * 1000;

function invalid(name: string, title: string, detail: string): Problem {
  return new Problem('invalidParameter', title, { errors: [{ pointer: `/${name}`, detail }] });
}

/** A time from the query; one neither database could store (years 0001 to 9999) is a 400 naming it. */
export function timeOf(value: string, name: string): Date {
  const time = new Date(value);
  if (!isStorableTime(time.getTime())) {
    const detail = 'RFC 3339 date-time from year 0001 to 9999, without a leap second';
    throw invalid(name, `${name} is not a time this service can compare`, detail);
  }
  return time;
}

function notBefore(): Problem {
  return invalid('since', 'since must be a time before until', 'RFC 3339 date-time, before until');
}

/** `since` (included) and `until` (excluded), each optional; since must come first. */
export function windowOf(query: { since?: string; until?: string }): { since?: Date; until?: Date } {
  const since = query.since === undefined ? undefined : timeOf(query.since, 'since');
  const until = query.until === undefined ? undefined : timeOf(query.until, 'until');
  if (since && until && since >= until) throw notBefore();
  return { since, until };
}

/**
 * The window [since, until) of a chart: until defaults to now, since to a day before until (year 0001 at
 * the earliest). With `maxHours`, a longer window is a 400.
 */
export function boundedWindow(
  query: { since?: string; until?: string },
  now: Date,
  maxHours?: number,
): { since: Date; until: Date } {
  const until = query.until === undefined ? now : timeOf(query.until, 'until');
  const since =
    query.since === undefined
      ? new Date(Math.max(until.getTime() - 24 * HOUR_MS, EARLIEST_STORABLE_MS))
      : timeOf(query.since, 'since');
  if (since >= until) throw notBefore();
  if (maxHours !== undefined && until.getTime() - since.getTime() > maxHours * HOUR_MS)
    throw invalid('since', `the window is at most ${maxHours} hours`, `at most ${maxHours} h before until`);
  return { since, until };
}

/** A page's end as a cursor: its time in milliseconds and the key that breaks ties. */
export function cursorAfter(at: Date, key: string | number): { t: number; k: string | number } {
  return { t: at.getTime(), k: key };
}

/** The position a `cursor` stands for, or a 400 when this service did not give it out. */
export function positionOf<K extends string | number>(
  cursor: string | undefined,
  keyType: K extends string ? 'string' : 'number',
  validKey: (key: K) => boolean,
): { at: Date; key: K } | undefined {
  if (cursor === undefined) return undefined;
  const decoded = decodeCursor(cursor, { t: 'number', k: keyType });
  const t = decoded?.t as number;
  if (!decoded || !Number.isInteger(t) || !isStorableTime(t) || !validKey(decoded.k as K))
    throw invalid('cursor', 'cursor is not one this list gave out', 'use the next link of the previous page');
  return { at: new Date(t), key: decoded.k as K };
}

/**
 * The position of a client list's `cursor` (created_at as stored, client or user id). It is not signed, so
 * a time neither database stores, or U+0000 in the id (PostgreSQL refuses it in text), is a 400, not a 500.
 */
export function clientCursorOf(cursor: string | undefined): { createdAt: string; id: string } | undefined {
  if (cursor === undefined) return undefined;
  const decoded = decodeCursor(cursor, { c: 'string', i: 'string' });
  if (!decoded || !isStorableTime(Date.parse(decoded.c as string)) || hasControlCharacter(decoded.i as string))
    throw invalid('cursor', 'cursor is not one this list gave out', 'use the next link of the previous page');
  return { createdAt: decoded.c as string, id: decoded.i as string };
}
