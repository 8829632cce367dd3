// JSON request bodies. Replaces Fastify's parser for these reasons:
// - a number the client wrote must mean exactly that number: JSON.parse silently rounds
//   19.999999999999999 to 20, so any number that does not survive the parse is refused (422);
// - `__proto__` members, and `prototype` members holding an object, are refused outright (prototype pollution
//   via later merges); `constructor` alone cannot reach a prototype through a JSON value and is accepted;
// - nesting is bounded, so a small body cannot exhaust the stack of the parse or of later walks;
// - a member name repeated in one object is refused (400): JSON.parse keeps the last, a gateway or WAF
//   in front may check the first, and that difference lets a checked body mean something else here
//   (RFC 8259 §4 names SHOULD be unique; RFC 7493 §2.3 I-JSON MUST NOT repeat them);
// - the bytes must be UTF-8 (RFC 8259 §8.1): invalid sequences are a 400, not U+FFFD stored in their place;
// - an empty body is no body, whatever Content-Type says (RFC 9110 §8.3: the header describes content);
// - the patch media types are bodies of PATCH only (RFC 5789 §2; docs/guides/calling-the-api.md, "HTTP semantics":
//   bodies are application/json);
// - errors become problem+json from the one catalogue.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse as parseContentType } from 'content-type';
import { clip, Problem, pointerSegment } from '../problems/problems.ts';

/** Deepest nesting of arrays and objects accepted; our documents need a handful of levels. */
const MAX_NESTING = 64;

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** Canonical form of a decimal literal: sign, significant digits without surrounding zeros, exponent. */
function canonicalDecimal(text: string): string | null {
  const m = DECIMAL.exec(text);
  if (!m) return null;
  const [, sign = '', int = '', frac = '', exp = '0'] = m;
  let digits = (int + frac).replace(/^0+/, '');
  let exponent = Number(exp) - frac.length;
  if (digits === '') return '0';
  const trimmed = digits.replace(/0+$/, '');
  exponent += digits.length - trimmed.length;
  digits = trimmed;
  return `${sign}${digits}e${exponent}`;
}

/** Names already seen in one object. Kept per nesting level and reused, so a scan allocates none per object. */
class MemberNames {
  // A few names are compared one by one (most objects have a handful); a Set takes over beyond that.
  static readonly FEW = 16;
  readonly #few: string[] = [];
  #many: Set<string> | undefined;

  clear(): void {
    this.#few.length = 0;
    this.#many = undefined;
  }

  /** Records `name`; false when the object already had it. */
  add(name: string): boolean {
    if (this.#many) {
      if (this.#many.has(name)) return false;
      this.#many.add(name);
      return true;
    }
    if (this.#few.includes(name)) return false;
    this.#few.push(name);
    if (this.#few.length > MemberNames.FEW) this.#many = new Set(this.#few);
    return true;
  }
}

/** A member name repeated within one object: the way down to that object, and the (decoded) name. */
interface Duplicate {
  path: string[];
  name: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Index of the quote that closes the string opened at `open` (text.length when it is never closed). */
function closingQuote(text: string, open: number): number {
  for (let from = open + 1; ;) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return text.length;
    let before = quote - 1;
    while (before > open && text.charCodeAt(before) === BACKSLASH) before--;
    if ((quote - 1 - before) % 2 === 0) return quote; // an even run of backslashes escapes only itself
    from = quote + 1;
  }
}

/**
 * A member name as JSON.parse will key it: escapes decoded ("\u0054otal" is "Total", "\/" is "/"),
 * so spellings that differ only in escapes collide as they do in the parsed object. Only a name with a
 * backslash needs decoding; undefined when it is not a valid string (the parse reports that).
 */
function memberName(text: string, open: number, close: number): string | undefined {
  const raw = text.slice(open + 1, close);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(text.slice(open, close + 1)) as string;
  } catch {
    return undefined;
  }
}

/**
 * One linear pass over the text, before JSON.parse: refuses nesting deeper than `limit` (a scan cannot
 * overflow the stack, a recursive walk could) and returns the first member name repeated within one
 * object, at any depth. It assumes the text is JSON; on text that is not, its answer is ignored, since
 * the parse then reports the syntax error.
 */
function scanStructure(text: string, limit: number): Duplicate | undefined {
  const inObject: boolean[] = []; // per depth: an object (true) or an array
  const names: MemberNames[] = []; // per depth, for objects
  const member: string[] = []; // per depth: the current member name (objects) …
  const index: number[] = []; // … or element index (arrays), for the pointer of a duplicate
  let depth = 0;
  let expectName = false;
  let duplicate: Duplicate | undefined;
  let checking = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const close = closingQuote(text, i);
      if (expectName && checking) {
        const name = memberName(text, i, close);
        if (name === undefined) checking = false;
        else if (!names[depth]!.add(name)) {
          duplicate = { path: pathAt(depth, inObject, member, index), name };
          checking = false;
        } else member[depth] = name;
      }
      expectName = false;
      i = close;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) {
        throw new Problem('malformedBody', `the body nests arrays and objects more than ${limit} levels deep`);
      }
      expectName = inObject[depth] = c === 0x7b;
      index[depth] = 0;
      if (expectName) (names[depth] ??= new MemberNames()).clear();
    } else if (c === 0x7d || c === 0x5d) {
      if (depth > 0) depth--;
      expectName = false;
    } else if (c === 0x2c && depth > 0) {
      if (inObject[depth]) expectName = true;
      else index[depth]!++;
    }
  }
  return duplicate;
}

/** Member names and indexes from the root down to the container at `depth` (error path only). */
function pathAt(depth: number, inObject: boolean[], member: string[], index: number[]): string[] {
  const path: string[] = [];
  for (let d = 1; d < depth; d++) path.push(inObject[d] ? member[d]! : String(index[d]));
  return path;
}

function pointerFrom(path: readonly string[]): string {
  return path.map((name) => `/${pointerSegment(name)}`).join('');
}

function duplicateProblem({ path, name }: Duplicate): Problem {
  const where = path.length === 0 ? '' : ` (the object at ${clip(pointerFrom(path))})`;
  return new Problem(
    'malformedBody',
    `the member name ${JSON.stringify(clip(name))} appears more than once in the same object${where}`,
    { errors: [{ pointer: clip(pointerFrom([...path, name])), detail: 'member name appears more than once' }] },
  );
}

interface ReviverContext {
  source?: string;
}

/** A number that JSON.parse rounded: where it sits (its container and member) and what was sent. */
interface Inexact {
  holder: object;
  key: string;
  source: string;
}

function isInexact(value: unknown, context: ReviverContext | undefined): context is { source: string } {
  // Up to 15 characters without an exponent means at most 15 significant digits: always exact (DBL_DIG).
  if (typeof value !== 'number' || context?.source === undefined) return false;
  if (context.source.length <= 15 && !/[eE]/.test(context.source)) return false;
  return canonicalDecimal(context.source) !== canonicalDecimal(String(value).replace('e+', 'e'));
}

/** Member names from `node` down to `target` (found by identity), or null when `target` is not inside. */
function pathTo(node: unknown, target: object): string[] | null {
  if (node === target) return [];
  if (typeof node !== 'object' || node === null) return null;
  for (const [name, child] of Object.entries(node)) {
    const rest = pathTo(child, target);
    if (rest) return [name, ...rest];
  }
  return null;
}

/**
 * RFC 6901 pointer of the inexact number inside the parsed document. The reviver only sees the
 * number's container, so the path is recovered afterwards (error path only). The root value's
 * container is JSON.parse's wrapper `{"": value}`, which is not in the document: pointer "".
 */
function pointerOf(root: unknown, at: Inexact): string {
  const path = pathTo(root, at.holder);
  return path === null ? '' : pointerFrom([...path, at.key]);
}

export function parseJsonBody(text: string): unknown {
  const duplicate = scanStructure(text, MAX_NESTING);
  let inexact: Inexact | undefined;
  function reviver(this: object, key: string, value: unknown, context?: ReviverContext): unknown {
    if (key === '__proto__' || (key === 'prototype' && typeof value === 'object')) {
      throw new Problem('malformedBody', `the member name "${key}" is not allowed`);
    }
    if (!inexact && isInexact(value, context)) inexact = { holder: this, key, source: context.source };
    return value;
  }
  let document: unknown;
  try {
    document = JSON.parse(text, reviver as (this: unknown, key: string, value: unknown) => unknown);
  } catch (err) {
    if (err instanceof Problem) throw err;
    // A SyntaxError says where the text stops being JSON; anything else is the engine's business.
    const why = err instanceof SyntaxError ? `: ${clip(err.message)}` : '';
    throw new Problem('malformedBody', `the body is not valid JSON${why}`);
  }
  // Only now: text that is not JSON gets the syntax error, whatever the scan made of it.
  if (duplicate) throw duplicateProblem(duplicate);
  if (inexact) {
    throw new Problem(
      'validation',
      `the number ${clip(inexact.source, 40)} cannot be represented exactly; send at most 15 significant digits`,
      {
        errors: [{ pointer: clip(pointerOf(document, inexact)), detail: 'number cannot be represented exactly' }],
      },
    );
  }
  return document;
}

/**
 * RFC 8259 §8.1: JSON exchanged between systems MUST be UTF-8. `fatal`: a malformed sequence (an
 * overlong form, an encoded surrogate, a stray continuation byte) is an error instead of a U+FFFD that
 * would be stored in place of what the client meant. `ignoreBOM: true` keeps a leading BOM in the
 * text, where decodeUtf8 refuses it. One decoder for all requests: decode() without `stream` keeps no state.
 */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeUtf8(body: Buffer): string {
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    throw new Problem('malformedBody', 'the body is not valid UTF-8 (RFC 8259 §8.1)');
  }
  // RFC 8259 §8.1 lets a parser ignore a byte order mark, but one that did not (a gateway, a WAF) would
  // see no JSON where we see some: the kind of difference the duplicate check closes. Refused, as it
  // always was (JSON.parse rejects U+FEFF).
  if (text.charCodeAt(0) === 0xfeff) {
    throw new Problem(
      'malformedBody',
      'the body starts with a byte order mark; send UTF-8 without one (RFC 8259 §8.1)',
    );
  }
  return text;
}

/** `utf8` is not the registered name, but WHATWG Encoding (TextDecoder) takes it for UTF-8, and clients send it. */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8']);

/** The charset parameter of a Content-Type, lower-cased and unquoted (RFC 9110 §5.6.6), if there is one. */
function charsetOf(contentType: string | undefined): string | undefined {
  // Nearly every request says plain `application/json`: no parameter, nothing to parse.
  if (contentType === undefined || !contentType.includes(';')) return undefined;
  try {
    return parseContentType(contentType).parameters.charset?.toLowerCase();
  } catch {
    throw new Problem('unsupportedMediaType', 'Content-Type is not a media type (RFC 9110 §8.3)');
  }
}

/**
 * RFC 8259 §11 defines no charset parameter for application/json ("no effect on compliant recipients"),
 * but a client that names another one has most likely encoded its body that way: read as UTF-8 it would
 * be refused or, worse, accepted with other characters. 415 says what to change (RFC 9110 §15.5.16).
 */
function requireUtf8Charset(request: FastifyRequest): void {
  const charset = charsetOf(request.headers['content-type']);
  if (charset === undefined || UTF8_CHARSETS.has(charset)) return;
  throw new Problem(
    'unsupportedMediaType',
    `JSON bodies are UTF-8 (RFC 8259 §8.1); charset=${clip(charset, 40)} is not accepted`,
  );
}

type Done = (err: Error | null, body?: unknown) => void;

function parse(request: FastifyRequest, body: Buffer, done: Done): void {
  try {
    requireUtf8Charset(request);
    done(null, parseJsonBody(decodeUtf8(body)));
  } catch (err) {
    done(err as Error, undefined);
  }
}

/**
 * An empty body is no body (RFC 9110 §8.3: Content-Type describes content, and there is none): many
 * clients send `Content-Type: application/json` on every request, a DELETE or an action POST included.
 * `request.body` stays undefined, exactly as without the header, so a route that needs a body refuses
 * it the same way either way (http/problems/errors.ts).
 */
function parseJson(request: FastifyRequest, body: Buffer, done: Done): void {
  if (body.length === 0) done(null, undefined);
  else parse(request, body, done);
}

/** `patchMediaTypes`: the PATCH document types the features accept (http/feature.ts), JSON too. */
export function registerJsonBody(app: FastifyInstance, patchMediaTypes: readonly string[]): void {
  // Only JSON media types are bodies here: Fastify's built-in text/plain parser would hand the route a
  // string (a 422 from schema validation) where the right answer is 415 Unsupported Media Type.
  app.removeAllContentTypeParsers();
  // Bytes, not a string: Fastify would decode them as UTF-8 with replacement characters.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJson);
  // A patch document is not the resource: read as plain JSON by a POST or PUT it would create or
  // replace the wrong thing, so outside PATCH these types are 415 (RFC 9110 §15.5.16).
  if (patchMediaTypes.length === 0) return;
  const patchTypes = [...patchMediaTypes];
  const typeOf = (request: FastifyRequest): string =>
    patchTypes.find((t) => request.headers['content-type']?.trim().toLowerCase().startsWith(t)) ??
    patchTypes.join(' or ');
  const parsePatch = (request: FastifyRequest, body: Buffer, done: Done): void => {
    if (request.method === 'PATCH') {
      // A PATCH is its patch document (RFC 5789 §2): without one there is nothing to apply.
      if (body.length > 0) return parse(request, body, done);
      return done(new Problem('malformedBody', `a body is required: the ${typeOf(request)} patch document`));
    }
    if (body.length === 0) return done(null, undefined); // no body: the type describes nothing
    done(
      new Problem(
        'unsupportedMediaType',
        `${typeOf(request)} is only accepted by PATCH; send the ${request.method} body as application/json`,
      ),
      undefined,
    );
  };
  app.addContentTypeParser(patchTypes, { parseAs: 'buffer' }, parsePatch);
}
