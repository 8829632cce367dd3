// JSON request bodies. Replaces Fastify's parser for these reasons:
// - a number the client wrote must mean exactly that number: JSON.parse silently rounds
//   19.999999999999999 to 20, so any number that does not survive the parse is refused (422);
// - `__proto__`/`constructor` keys are refused outright (prototype pollution via later merges);
// - nesting is bounded, so a small body cannot exhaust the stack of the parse or of later walks;
// - the patch media types are bodies of PATCH only (RFC 5789 §2; README "HTTP semantics": bodies are application/json);
// - errors become problem+json from the one catalogue.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { clip, Problem, pointerSegment } from './problems.ts';

/** Deepest nesting of arrays and objects accepted; our documents need a handful of levels. */
export const MAX_NESTING = 64;

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

/** True when `text` opens more than `limit` arrays/objects at once. A linear scan, so the check itself cannot overflow. */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
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
  return path === null ? '' : [...path, at.key].map((name) => `/${pointerSegment(name)}`).join('');
}

export function parseJsonBody(text: string): unknown {
  if (nestsDeeperThan(text, MAX_NESTING)) {
    throw new Problem('malformedBody', `the body nests arrays and objects more than ${MAX_NESTING} levels deep`);
  }
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

function parse(_request: FastifyRequest, body: string, done: (err: Error | null, body?: unknown) => void): void {
  if (body.length === 0) {
    done(new Problem('malformedBody', 'the body is empty but Content-Type says JSON'), undefined);
    return;
  }
  try {
    done(null, parseJsonBody(body));
  } catch (err) {
    done(err as Error, undefined);
  }
}

/** `patchMediaTypes`: the PATCH document types the features accept (http/feature.ts), JSON too. */
export function registerJsonBody(app: FastifyInstance, patchMediaTypes: readonly string[]): void {
  // Only JSON media types are bodies here: Fastify's built-in text/plain parser would hand the route a
  // string (a 422 from schema validation) where the right answer is 415 Unsupported Media Type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  // A patch document is not the resource: read as plain JSON by a POST or PUT it would create or
  // replace the wrong thing, so outside PATCH these types are 415 (RFC 9110 §15.5.16).
  if (patchMediaTypes.length === 0) return;
  const patchTypes = [...patchMediaTypes];
  app.addContentTypeParser(patchTypes, { parseAs: 'string' }, (request, body: string, done) => {
    if (request.method === 'PATCH') return parse(request, body, done);
    const type =
      patchTypes.find((t) => request.headers['content-type']?.trim().toLowerCase().startsWith(t)) ??
      patchTypes.join(' or ');
    done(
      new Problem(
        'unsupportedMediaType',
        `${type} is only accepted by PATCH; send the ${request.method} body as application/json`,
      ),
      undefined,
    );
  });
}
