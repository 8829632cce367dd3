// Conditional request evaluation (RFC 9110 §13) and HTTP-date handling (RFC 9110 §5.6.7).
// Pure functions: the caller maps the result to 304 / 412 and sets ETag / Last-Modified itself.

export interface Validators {
  /** Current strong entity-tag, quoted, e.g. '"o12-v3-ab12"'. */
  etag: string;
  /**
   * Last modification time at the precision it is stored (milliseconds). A client's HTTP-date is
   * compared with it as it is, not rounded to the second: see unmodifiedSince and notModifiedSince.
   */
  lastModified?: Date;
  /**
   * Decides whether a client-sent strong tag (still quoted) identifies the current state for If-Match,
   * e.g. to let any variant of the same version match. Defaults to strong comparison with `etag`.
   */
  matchesCurrent?: (tag: string) => boolean;
}

type PreconditionResult = 'proceed' | 'not-modified' | 'precondition-failed';

interface EntityTag {
  /** The opaque-tag including its double quotes, without the W/ prefix. */
  tag: string;
  weak: boolean;
}

type EntityTagList = { any: true } | { any: false; tags: EntityTag[] };

type Headers = Record<string, string | string[] | undefined>;

// ---------------------------------------------------------------------------------------------
// Entity-tag lists: If-Match = "*" / #entity-tag, If-None-Match likewise (RFC 9110 §13.1.1, §13.1.2).
// ---------------------------------------------------------------------------------------------

const DQUOTE = 0x22;

// etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3). Commas are legal inside an opaque-tag,
// so the list cannot simply be split on ','.
function isEtagc(code: number): boolean {
  return code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
}

function isOws(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

function skipOws(value: string, pos: number): number {
  while (pos < value.length && isOws(value.charCodeAt(pos))) pos++;
  return pos;
}

/** Reads one entity-tag starting at `pos`; returns it and the index after it, or null if malformed. */
function readEntityTag(value: string, pos: number): { etag: EntityTag; end: number } | null {
  // The W/ prefix is case-sensitive (%s"W/" in RFC 9110 §8.8.3).
  const weak = value.startsWith('W/', pos);
  const open = weak ? pos + 2 : pos;
  if (value.charCodeAt(open) !== DQUOTE) return null;
  let i = open + 1;
  while (i < value.length && isEtagc(value.charCodeAt(i))) i++;
  if (value.charCodeAt(i) !== DQUOTE) return null;
  return { etag: { tag: value.slice(open, i + 1), weak }, end: i + 1 };
}

/**
 * Parses an If-Match / If-None-Match field value (multiple field lines joined with ", ").
 * Empty list elements are skipped as RFC 9110 §5.6.1.2 requires of recipients.
 * Returns null when the value is not a valid list; evaluatePreconditions then treats it as a list
 * that matches nothing (see there for why).
 */
export function parseEntityTagList(value: string): EntityTagList | null {
  if (value.trim() === '*') return { any: true };
  const tags: EntityTag[] = [];
  let pos = 0;
  while (pos < value.length) {
    pos = skipOws(value, pos);
    if (pos >= value.length) break;
    if (value[pos] === ',') {
      pos++;
      continue;
    }
    const read = readEntityTag(value, pos);
    if (read === null) return null;
    tags.push(read.etag);
    pos = skipOws(value, read.end);
    if (pos < value.length && value[pos] !== ',') return null;
  }
  return { any: false, tags };
}

// ---------------------------------------------------------------------------------------------
// HTTP-date (RFC 9110 §5.6.7)
// ---------------------------------------------------------------------------------------------

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAYS = 'Mon|Tue|Wed|Thu|Fri|Sat|Sun';
const LONG_DAYS = 'Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday';
const MONTH = MONTHS.join('|');
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

// The three grammars of §5.6.7; each captures day, month, year, hour, minute, second in that order
// (asctime is reordered in parseHttpDate).
const IMF_FIXDATE = new RegExp(`^(?:${DAYS}), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:${LONG_DAYS}), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:${DAYS}) (${MONTH}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * Formats as IMF-fixdate, the only form a sender may generate (RFC 9110 §5.6.7). Milliseconds are
 * truncated: the date is never later than the time it stands for, so a Last-Modified is never later
 * than the message's own origination (RFC 9110 §8.8.2.1).
 */
export function formatHttpDate(d: Date): string {
  if (Number.isNaN(d.getTime())) throw new RangeError('formatHttpDate: invalid Date');
  // ECMA-262 defines Date.prototype.toUTCString as exactly the IMF-fixdate layout.
  return d.toUTCString();
}

// RFC 9110 §5.6.7: a two-digit year that appears to be more than 50 years in the future
// means the most recent past year with the same last two digits.
function expandTwoDigitYear(yy: number): number {
  const thisYear = new Date().getUTCFullYear();
  const year = thisYear - (thisYear % 100) + yy;
  return year > thisYear + 50 ? year - 100 : year;
}

function buildDate(day: string, month: string, year: number, time: string[]): Date | null {
  const [hh, mm, ss] = time.map(Number) as [number, number, number];
  const mon = MONTHS.indexOf(month);
  const dd = Number(day.trim());
  if (hh > 23 || mm > 59 || ss > 60) return null;
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 onto 1900-1999.
  date.setUTCFullYear(year, mon, dd);
  // Second 60 is a leap second (RFC 9110 §5.6.7 allows "23:59:60"); JS dates cannot hold it.
  date.setUTCHours(hh, mm, Math.min(ss, 59), 0);
  // Rejects impossible days such as 31 Feb, which would otherwise silently roll over.
  return date.getUTCDate() === dd && date.getUTCMonth() === mon ? date : null;
}

/** Parses any of the three HTTP-date forms; null when invalid, which callers treat as "ignore the field". */
export function parseHttpDate(value: string): Date | null {
  const v = value.trim();
  let m = IMF_FIXDATE.exec(v);
  if (m) return buildDate(m[1]!, m[2]!, Number(m[3]), [m[4]!, m[5]!, m[6]!]);
  m = RFC850_DATE.exec(v);
  if (m) return buildDate(m[1]!, m[2]!, expandTwoDigitYear(Number(m[3])), [m[4]!, m[5]!, m[6]!]);
  m = ASCTIME_DATE.exec(v);
  if (m) return buildDate(m[2]!, m[1]!, Number(m[6]), [m[3]!, m[4]!, m[5]!]);
  return null;
}

// ---------------------------------------------------------------------------------------------
// Precondition evaluation (RFC 9110 §13.2.2)
// ---------------------------------------------------------------------------------------------

/** Multiple field lines form one comma-separated list (RFC 9110 §5.3). */
function listHeader(headers: Headers, name: string): string | undefined {
  const raw = headers[name];
  return Array.isArray(raw) ? raw.join(', ') : raw;
}

/** A date field sent more than once "appears to be a list of dates" and is ignored (§13.1.3, §13.1.4). */
function dateHeader(headers: Headers, name: string): Date | null {
  const raw = headers[name];
  if (raw === undefined) return null;
  if (Array.isArray(raw)) return raw.length === 1 ? parseHttpDate(raw[0]!) : null;
  return parseHttpDate(raw);
}

function opaque(etag: string): { tag: string; weak: boolean } {
  return etag.startsWith('W/') ? { tag: etag.slice(2), weak: true } : { tag: etag, weak: false };
}

// Strong comparison (§8.8.3.2): both tags strong and identical. matchesCurrent may widen "identical".
function strongMatch(tag: EntityTag, current: Validators): boolean {
  if (tag.weak) return false;
  if (current.matchesCurrent) return current.matchesCurrent(tag.tag);
  const own = opaque(current.etag);
  return !own.weak && own.tag === tag.tag;
}

// Weak comparison (§8.8.3.2): opaque-tags identical, W/ ignored on either side.
function weakMatch(tag: EntityTag, current: Validators): boolean {
  return opaque(current.etag).tag === tag.tag;
}

// A syntactically invalid list (null) matches nothing. For If-Match this fails the request (412),
// which keeps the lost-update protection the client asked for; for If-None-Match it is the same as
// ignoring the field. RFC 9110 does not prescribe handling of malformed entity-tag lists.
function listMatches(
  list: EntityTagList | null,
  current: Validators | null,
  compare: (tag: EntityTag, current: Validators) => boolean,
): boolean {
  if (list === null || current === null) return false; // §13.1.1/§13.1.2: nothing matches a missing resource
  if (list.any) return true;
  return list.tags.some((tag) => compare(tag, current));
}

// HTTP-dates have whole-second precision (RFC 9110 §5.6.7) while a modification time is stored to the
// millisecond. Rounding the stored time down to its second would make two changes within one second
// look like one: If-Unmodified-Since with the first change's Last-Modified would let a write overwrite
// the second change (a lost update), and If-Modified-Since would answer 304 for a changed resource.
// So both compare the stored time as it is with the date, which stands for the start of its second:
// whenever the two cannot be told apart, If-Unmodified-Since fails (412) and If-Modified-Since sends the
// representation (200). The price: a Last-Modified with a fraction cut off never validates itself;
// entity-tags (If-Match, If-None-Match) are the exact validators (docs/guides/calling-the-api.md, "HTTP semantics").

/** §13.1.4: true when the resource has not changed after `date`; ignored (true) without a Last-Modified. */
function unmodifiedSince(date: Date, current: Validators | null): boolean {
  if (!current?.lastModified) return true;
  return current.lastModified.getTime() <= date.getTime();
}

/** §13.1.3: true (304) only when the stored time is at or before `date`, to the millisecond. */
function notModifiedSince(date: Date, lastModified: Date): boolean {
  return lastModified.getTime() <= date.getTime();
}

/** Steps 1-2 of §13.2.2: If-Match, else If-Unmodified-Since. */
function writeConditionHolds(headers: Headers, current: Validators | null): boolean {
  const ifMatch = listHeader(headers, 'if-match');
  if (ifMatch !== undefined) return listMatches(parseEntityTagList(ifMatch), current, strongMatch);
  const since = dateHeader(headers, 'if-unmodified-since');
  return since === null || unmodifiedSince(since, current);
}

/**
 * Evaluates the preconditions in the order of RFC 9110 §13.2.2. Range handling (steps 5-6) is not
 * supported by this service, so If-Range is ignored.
 * `current === null` means the resource does not exist.
 */
export function evaluatePreconditions(
  method: string,
  headers: Headers,
  current: Validators | null,
): PreconditionResult {
  if (!writeConditionHolds(headers, current)) return 'precondition-failed';
  const readOnly = method === 'GET' || method === 'HEAD';
  const ifNoneMatch = listHeader(headers, 'if-none-match');
  if (ifNoneMatch !== undefined) {
    // Step 3: If-None-Match is false when any tag matches (weak comparison, §13.1.2).
    if (!listMatches(parseEntityTagList(ifNoneMatch), current, weakMatch)) return 'proceed';
    return readOnly ? 'not-modified' : 'precondition-failed';
  }
  // Step 4: If-Modified-Since only for GET/HEAD and only without If-None-Match (§13.1.3).
  if (!readOnly) return 'proceed';
  const since = dateHeader(headers, 'if-modified-since');
  if (since === null || !current?.lastModified) return 'proceed';
  return notModifiedSince(since, current.lastModified) ? 'not-modified' : 'proceed';
}
