// PATCH routes: their body schemas only describe the patch documents (see PatchBody in
// orders.schemas.ts) for the OpenAPI document; a malformed patch must stay a 400 invalid-patch
// (RFC 5789 §2.2), which orders.patch-documents.ts decides, so bodies are not validated here. Everything else is.
import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler } from '../http/problems/validation.ts';

export const patchValidatorCompiler: FastifySchemaCompiler<unknown> = (route) =>
  route.httpPart === 'body' ? () => true : validatorCompiler(route);
