// Applies PATCH documents (RFC 5789) to the JSON representation of an order:
// JSON Merge Patch (RFC 7396) and JSON Patch (RFC 6902). Pure functions: the
// caller's target is never mutated, and a failed patch changes nothing.
import jsonpatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';

type PatchMediaType = 'application/merge-patch+json' | 'application/json-patch+json';

export const PATCH_MEDIA_TYPES: readonly PatchMediaType[] = [
  'application/merge-patch+json',
  'application/json-patch+json',
];

type PatchFailureKind = 'invalid-patch' | 'test-failed' | 'conflict';

export type PatchResult =
  | { ok: true; document: Record<string, unknown> }
  | { ok: false; kind: PatchFailureKind; detail: string; pointer?: string };

/** Media type of a Content-Type header, ignoring parameters; type names are case-insensitive (RFC 9110 §8.3.1). */
export function patchMediaType(contentTypeHeader: string | undefined): PatchMediaType | null {
  const essence = (contentTypeHeader ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return PATCH_MEDIA_TYPES.find((type) => type === essence) ?? null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function failure(kind: PatchFailureKind, detail: string, pointer?: string): PatchResult {
  return pointer === undefined ? { ok: false, kind, detail } : { ok: false, kind, detail, pointer };
}

// Keys that would reach Object.prototype if a patch were applied to a plain
// object by assignment; no order field uses them (keys are PascalCase).
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

// RFC 7396 §2 MergePatch(Target, Patch). Works in place on values the caller
// has already cloned; members are defined as own data properties (never set
// by assignment), so no member name can reach a prototype.
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? target : {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name];
    else defineMember(result, name, mergePatch(result[name], value));
  }
  return result;
}

function defineMember(object: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
}

// Depth-first search for a forbidden member name; returns its JSON pointer.
function forbiddenMember(value: unknown, pointer = ''): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [name, child] of Object.entries(value)) {
    const childPointer = `${pointer}/${escapePointerToken(name)}`;
    if (FORBIDDEN_KEYS.has(name)) return childPointer;
    const nested = forbiddenMember(child, childPointer);
    if (nested !== undefined) return nested;
  }
  return undefined;
}

function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1'); // RFC 6901 §3
}

/** RFC 7396 JSON Merge Patch. A patch that is not an object replaces the whole document, which an order cannot be. */
export function applyMergePatch(target: Record<string, unknown>, patch: unknown): PatchResult {
  const forbidden = forbiddenMember(patch);
  if (forbidden !== undefined) return failure('invalid-patch', 'member name is not allowed', forbidden);
  const document = mergePatch(structuredClone(target), structuredClone(patch));
  if (!isObject(document)) return failure('invalid-patch', 'merge patch must be a JSON object', '');
  return { ok: true, document };
}

// Operations that leave a value at their `path` (RFC 6902 §4.1-§4.5); remove and test do not.
const WRITING_OPERATIONS: ReadonlySet<unknown> = new Set(['add', 'replace', 'move', 'copy']);

/**
 * Whether the patch sets the top-level member `name`, even to the value it already has: a request for
 * that value, which the document after the patch cannot tell from a member the patch left alone.
 * Merge patch: the member is present and not null (null removes it, RFC 7396 §2). JSON Patch: an
 * operation writes at the member's pointer, or replaces the whole document (path "", RFC 6901 §5).
 */
export function patchSetsMember(mediaType: PatchMediaType, patch: unknown, name: string): boolean {
  if (mediaType === 'application/merge-patch+json') {
    return isObject(patch) && Object.hasOwn(patch, name) && patch[name] !== null;
  }
  const pointer = `/${escapePointerToken(name)}`;
  return (
    Array.isArray(patch) &&
    patch.some((op) => isObject(op) && WRITING_OPERATIONS.has(op.op) && (op.path === pointer || op.path === ''))
  );
}

// RFC 6901 tokens of a pointer, unescaped (~1 before ~0, §4).
function pointerTokens(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function touchesForbiddenKey(pointer: unknown): boolean {
  return typeof pointer === 'string' && pointerTokens(pointer).some((token) => FORBIDDEN_KEYS.has(token));
}

// RFC 6902 §4. The library looks ops up on a plain object, so names such as
// "_get" or "constructor" would otherwise pass its validator as no-ops.
const OPERATIONS: ReadonlySet<unknown> = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

// Checks the library does not make: op names, forbidden keys in "path",
// "from" or inside "value" (it only bans __proto__ and constructor/prototype
// in "path"), and a move into its own child (RFC 6902 §4.4).
function operationProblem(operation: unknown): string | undefined {
  if (!isObject(operation)) return 'operation must be a JSON object';
  const { op, path, from, value } = operation;
  if (!OPERATIONS.has(op)) return 'op must be one of add, remove, replace, move, copy, test';
  if (touchesForbiddenKey(path) || touchesForbiddenKey(from)) return 'path segment is not allowed';
  if (forbiddenMember(value) !== undefined) return 'member name is not allowed in value';
  if (op === 'move' && typeof from === 'string' && typeof path === 'string' && path.startsWith(`${from}/`)) {
    return '"from" must not be a proper prefix of "path" in a move';
  }
  return undefined;
}

function precheck(operations: unknown): PatchResult | undefined {
  if (!Array.isArray(operations)) return failure('invalid-patch', 'JSON Patch document must be an array', '');
  for (const [index, operation] of operations.entries()) {
    const problem = operationProblem(operation);
    if (problem !== undefined) return failure('invalid-patch', problem, `/${index}`);
  }
  return undefined;
}

// fast-json-patch JsonPatchError names -> outcome. Malformed operations are a
// client syntax error (400); operations that do not fit the current document
// are a conflict (RFC 5789 §2.2, RFC 6902 §5: 409); a failed test is its own
// outcome so the route can answer 409 or 412 as it sees fit.
const ERROR_KINDS: Readonly<Record<string, PatchFailureKind>> = {
  SEQUENCE_NOT_AN_ARRAY: 'invalid-patch',
  OPERATION_NOT_AN_OBJECT: 'invalid-patch',
  OPERATION_OP_INVALID: 'invalid-patch',
  OPERATION_PATH_INVALID: 'invalid-patch',
  OPERATION_FROM_REQUIRED: 'invalid-patch',
  OPERATION_VALUE_REQUIRED: 'invalid-patch',
  OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED: 'invalid-patch',
  TEST_OPERATION_FAILED: 'test-failed',
  OPERATION_PATH_UNRESOLVABLE: 'conflict',
  OPERATION_FROM_UNRESOLVABLE: 'conflict',
  OPERATION_PATH_CANNOT_ADD: 'conflict',
  OPERATION_PATH_ILLEGAL_ARRAY_INDEX: 'conflict',
  OPERATION_VALUE_OUT_OF_BOUNDS: 'conflict',
};

function fromLibraryError(error: unknown, ops: readonly Operation[]): PatchResult {
  // Anything else is a defect, not a client error: let the route answer 500.
  if (!(error instanceof jsonpatch.JsonPatchError)) throw error;
  const kind = ERROR_KINDS[error.name] ?? 'invalid-patch';
  // error.index is 0 for validation failures (the library passes a literal 0
  // to its validator), so locate the failing operation by identity instead.
  const index = ops.indexOf(error.operation as Operation);
  const pointer = index === -1 ? undefined : `/${index}`;
  const path =
    isObject(error.operation) && typeof error.operation.path === 'string' ? ` at "${error.operation.path}"` : '';
  return failure(kind, `${error.name.toLowerCase().replaceAll('_', ' ')}${path}`, pointer);
}

/**
 * RFC 6902 JSON Patch, atomic per §5: operations run on a deep clone, so the
 * target is untouched unless every operation succeeds. `pointer` locates the
 * failing operation inside the patch document (e.g. "/1").
 */
export function applyJsonPatch(target: Record<string, unknown>, operations: unknown): PatchResult {
  const rejected = precheck(operations);
  if (rejected !== undefined) return rejected;
  // Cloning the operations too keeps added values from aliasing the request body.
  const ops = structuredClone(operations) as Operation[];
  let document: unknown;
  try {
    document = jsonpatch.applyPatch(structuredClone(target), ops, true, true).newDocument;
  } catch (error) {
    return fromLibraryError(error, ops);
  }
  // A root move/copy from a missing "from" yields undefined (the library does
  // not validate "from" for root targets).
  if (document === undefined) return failure('conflict', '"from" does not exist in the document');
  if (!isObject(document)) return failure('invalid-patch', 'patched document must remain a JSON object');
  return { ok: true, document };
}
