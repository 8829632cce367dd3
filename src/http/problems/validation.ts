// Schema validation at the edge. Two ajv instances because the parts of a request differ:
// bodies are validated exactly as sent (no type coercion: "12" is not a number, unknown members are
// errors, never silently removed), while path and query strings are coerced to the declared types.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { Problem, type FieldError } from './problems.ts';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function createAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes, removeAdditional: false, useDefaults: true, strict: false });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = createAjv(false);
const paramsAjv = createAjv(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : paramsAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** For documents validated after a transformation (a patched order), with the body rules. */
export function compileBodyValidator<T>(schema: object): ValidateFunction<T> {
  return bodyAjv.compile<T>(schema);
}

/**
 * 8-4-4-4-12 hex digits, either case. Not ajv's `uuid` format: it also accepts a `urn:uuid:` prefix,
 * which SQLite would store as is and PostgreSQL's uuid column refuses (a 500).
 */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID = new RegExp(UUID_PATTERN);

/** Whether `value` may be bound to a uuid column (PostgreSQL refuses anything else with an error). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * No control characters (Unicode category Cc: C0, DEL, C1). None belongs in a name, an address or an id,
 * and PostgreSQL refuses U+0000 in text outright (22021, a 500 otherwise). As a schema `pattern` for
 * path and query strings (ajv compiles patterns with the `u` flag); `hasControlCharacter` for the rest.
 */
export const NO_CONTROL_CHARACTERS_PATTERN = '^\\P{Cc}*$';
const CONTROL_CHARACTER = /\p{Cc}/u;

export function hasControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/**
 * The 422 for field errors found after schema validation, every one listed in `errors`. The default
 * detail reads "Total: …; Currency: …".
 */
export function validationProblem(
  errors: FieldError[],
  detail = errors.map((e) => `${e.pointer.slice(1)}: ${e.detail}`).join('; '),
): Problem {
  return new Problem('validation', detail, { errors });
}
