// Keyset pagination over (created_at, id), the order every admin list pages in: the rows strictly past the
// last row of the previous page, in the list's direction. `id` breaks ties between rows created in the
// same millisecond, so a page boundary never skips nor repeats a row.
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { toDbTime } from './codecs.ts';

export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

/** `created_at, id` past `position`: `'>'` for a list oldest first, `'<'` for one newest first. */
export function pastPosition(direction: '<' | '>', position: KeysetPosition): RawBuilder<SqlBool> {
  const at = toDbTime(position.createdAt);
  const op = sql.raw(direction);
  return sql<SqlBool>`(created_at ${op} ${at} or (created_at = ${at} and id ${op} ${position.id}))`;
}
