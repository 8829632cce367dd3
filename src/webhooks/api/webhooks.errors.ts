// The problem types (RFC 9457) only the webhook API raises; the generic ones are in http/problems/problems.ts.
import { problemType } from '../../http/problems/problems.ts';

export const WEBHOOK_PROBLEMS = {
  webhookState: problemType(
    'webhook-state',
    409,
    'The webhook endpoint or delivery is not in a state that allows this',
  ),
  limitReached: problemType('limit-reached', 409, 'A limit on this resource was reached'),
} as const;
