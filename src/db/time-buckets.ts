// Time series for the operator overview: a row's time as the index of its fixed-width UTC bucket
// (floor(epoch seconds / width)), computed the same way on both databases. PostgreSQL's date_trunc would
// follow the session's time zone (a +05:30 zone moves every hour bucket); epoch arithmetic does not.
import { sql, type RawBuilder } from 'kysely';
import type { Dialect } from './executor.ts';

/** The bucket index of `column` for buckets `widthSeconds` wide, as an integer expression. */
export function bucketIndex(dialect: Dialect, column: string, widthSeconds: number): RawBuilder<number | string> {
  if (!Number.isSafeInteger(widthSeconds) || widthSeconds < 1) throw new RangeError(`bucket width ${widthSeconds}`);
  const width = sql.lit(widthSeconds);
  // SQLite stores times as ISO 8601 text (codecs.ts), which strftime('%s') reads; PostgreSQL's extract
  // returns numeric (exact), floored before the cast so that the division never rounds up.
  return dialect === 'postgres'
    ? sql<string>`floor(extract(epoch from ${sql.ref(column)}) / ${width})::bigint`
    : sql<number>`cast(strftime('%s', ${sql.ref(column)}) as integer) / ${width}`;
}

/** The regular axis of a series: every bucket from the one holding `since` to the one holding `until - 1 ms`. */
function bucketAxis(since: Date, until: Date, widthSeconds: number): number[] {
  const width = widthSeconds * 1000;
  const first = Math.floor(since.getTime() / width);
  const last = Math.floor((until.getTime() - 1) / width);
  const axis: number[] = [];
  for (let index = first; index <= last; index += 1) axis.push(index);
  return axis;
}

/** A half-open time range [since, until). */
export interface TimeWindow {
  since: Date;
  until: Date;
}

/** One entry per bucket of the window's axis, `fill(index, start)` giving its fields, dated by `At`. */
export function bucketSeries<T>(
  window: TimeWindow,
  widthSeconds: number,
  fill: (index: number, at: Date) => T,
): ({ At: string } & T)[] {
  return bucketAxis(window.since, window.until, widthSeconds).map((index) => {
    const at = bucketStart(index, widthSeconds);
    return { At: at.toISOString(), ...fill(index, at) };
  });
}

/** The start of bucket `index`. */
function bucketStart(index: number, widthSeconds: number): Date {
  return new Date(index * widthSeconds * 1000);
}
