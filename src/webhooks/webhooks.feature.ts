// What webhooks bring to the shared layers when the app composes them (http/feature.ts): their problem
// types, their section of the API description and the outgoing requests (OpenAPI `webhooks`); and their scopes.
import type { FeatureContribution } from '../http/feature.ts';
import { WEBHOOK_PROBLEMS } from './api/webhooks.errors.ts';
import { openApiWebhooks, WEBHOOKS_DESCRIPTION } from './api/webhooks.openapi.ts';

/** The scopes the webhook and event routes require → the words the consent page shows (collected in app.ts). */
export const WEBHOOKS_SCOPES: Readonly<Record<string, string>> = {
  'events:read': 'Read the events of your orders',
  'webhooks:manage': 'Register and manage webhook endpoints',
};

export function webhooksFeature(headerName: string): FeatureContribution {
  return {
    problemTypes: WEBHOOK_PROBLEMS,
    openApi: { description: WEBHOOKS_DESCRIPTION, tags: ['webhooks', 'events'], webhooks: openApiWebhooks(headerName) },
  };
}
