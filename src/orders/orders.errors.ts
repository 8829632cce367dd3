// The problem types (RFC 9457) only orders raise; the generic ones are in http/problems/problems.ts.
import { problemType } from '../http/problems/problems.ts';

export const ORDER_PROBLEMS = {
  invalidPatch: problemType('invalid-patch', 400, 'The patch document is malformed'),
  invalidTransition: problemType('invalid-state', 409, 'The order is not in a state that allows this'),
  patchConflict: problemType('patch-conflict', 409, 'The patch cannot be applied to the current representation'),
} as const;
