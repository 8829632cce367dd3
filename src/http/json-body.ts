// JSON request bodies. Replaces Fastify's parser for three reasons:
// - a number the client wrote must mean exactly that number: JSON.parse silently rounds
//   19.999999999999999 to 20, so any number that does not survive the parse is refused (422);
// - `__proto__`/`constructor` keys are refused outright (prototype pollution via later merges);
// - errors become problem+json from the one catalogue.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Problem, pointerSegment } from './problems.ts';

export const JSON_MEDIA_TYPES = ['application/json', 'application/merge-patch+json', 'application/json-patch+json'];

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

interface ReviverContext {
  source?: string;
}

function reviver(this: unknown, key: string, value: unknown, context?: ReviverContext): unknown {
  if (key === '__proto__' || (key === 'prototype' && typeof value === 'object')) {
    throw new Problem('malformedBody', `the member name "${key}" is not allowed`);
  }
  // Up to 15 characters without an exponent means at most 15 significant digits: always exact (DBL_DIG).
  if (typeof value === 'number' && context?.source !== undefined && (context.source.length > 15 || /[eE]/.test(context.source))) {
    const sent = canonicalDecimal(context.source);
    if (sent !== canonicalDecimal(String(value).replace('e+', 'e'))) {
      throw new Problem('validation', `the number ${context.source} cannot be represented exactly; send at most 15 significant digits`, {
        errors: [{ pointer: `/${pointerSegment(key)}`, detail: 'number cannot be represented exactly' }],
      });
    }
  }
  return value;
}

export function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text, reviver as (this: unknown, key: string, value: unknown) => unknown);
  } catch (err) {
    if (err instanceof Problem) throw err;
    throw new Problem('malformedBody', `the body is not valid JSON: ${(err as Error).message}`);
  }
}

export function registerJsonBody(app: FastifyInstance): void {
  // Only JSON media types are bodies here: Fastify's built-in text/plain parser would hand the route a
  // string (a 422 from schema validation) where the right answer is 415 Unsupported Media Type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_MEDIA_TYPES, { parseAs: 'string' }, (_request: FastifyRequest, body: string, done) => {
    if (body.length === 0) {
      done(new Problem('malformedBody', 'the body is empty but Content-Type says JSON'), undefined);
      return;
    }
    try {
      done(null, parseJsonBody(body));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
