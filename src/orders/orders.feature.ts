// What orders bring to the shared layers when the app composes them (http/feature.ts): their problem
// types, their section of the API description and the PATCH media types they accept; and their scopes.
import type { FeatureContribution } from '../http/feature.ts';
import { ORDER_PROBLEMS } from './orders.errors.ts';
import { PATCH_MEDIA_TYPES } from './orders.patch-documents.ts';

const DESCRIPTION = `**Order states**: \`pending\` →pay→ \`paid\` →ship→ \`shipped\` →deliver→ \`delivered\`; \`pending\` →cancel→ \`cancelled\`.
Only \`pending\` orders can change CustomerId/Total/Currency; only \`pending\` and \`cancelled\` orders can be deleted (409 otherwise).
Transitions: \`POST /api/orders/{id}/{pay|cancel|ship|deliver}\`, or PATCH of \`Status\`.

**Conditional requests**: strong ETags and Last-Modified on orders; If-None-Match/If-Modified-Since → 304; If-Match/If-Unmodified-Since on writes → 412 when stale.`;

/** The scopes orders' routes require → the words the consent page shows (collected in app.ts). */
export const ORDERS_SCOPES: Readonly<Record<string, string>> = {
  'orders:read': 'See your orders',
  'orders:write': 'Create, change, pay and cancel your orders',
};

export const ORDERS_FEATURE: FeatureContribution = {
  problemTypes: ORDER_PROBLEMS,
  openApi: { description: DESCRIPTION, tags: ['orders'] },
  patchMediaTypes: PATCH_MEDIA_TYPES,
};
