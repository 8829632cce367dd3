// Schema validation at the edge. Two ajv instances because the parts of a request differ:
// bodies are validated exactly as sent (no type coercion: "12" is not a number, unknown members are
// errors, never silently removed), while path and query strings are coerced to the declared types.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

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
