// Schema validation for the order routes: the app's compiler (src/http/validation.ts), with enum errors
// made useful. ajv reports a value outside an enum as "must be equal to one of the allowed values"
// without naming them, plus a separate "must be string" when it is not even a string; a client fixes
// the request from one entry per field that names what is allowed.
// (A candidate for src/http/errors.ts fieldErrors, which would cover every module; this file then goes.)
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler } from '../http/validation.ts';

export function namingAllowedValues(errors: readonly ErrorObject[]): ErrorObject[] {
  const enumAt = new Set(errors.filter((e) => e.keyword === 'enum').map((e) => e.instancePath));
  return errors
    .filter((e) => e.keyword !== 'type' || !enumAt.has(e.instancePath))
    .map((e) => (e.keyword === 'enum' ? { ...e, message: `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}` } : e));
}

/** Fastify reads a failed validator's `errors`, so the wrapper hands it the reshaped ones. */
export const ordersValidatorCompiler: FastifySchemaCompiler<unknown> = (route) => {
  const validate = validatorCompiler(route) as ValidateFunction;
  const wrapped = Object.assign(
    (data: unknown, context?: Parameters<ValidateFunction>[1]): boolean => {
      const valid = validate(data, context);
      wrapped.errors = valid ? null : namingAllowedValues(validate.errors ?? []);
      return valid;
    },
    // Present, it makes Fastify pass the parent data, which ajv needs to coerce or default a root value.
    { schemaEnv: validate.schemaEnv, errors: null as ErrorObject[] | null },
  );
  return wrapped;
};

/** PATCH: the body schemas only describe the patch documents (see PatchBody); everything else is validated. */
export const patchValidatorCompiler: FastifySchemaCompiler<unknown> = (route) => (route.httpPart === 'body' ? () => true : ordersValidatorCompiler(route));
