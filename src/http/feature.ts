// What a feature (orders, webhooks …) brings to the shared layers when the app composes it (app.ts).
// The shared layers know no feature by name (docs/architecture.md, "Dependency direction"): they learn its problem types,
// OpenAPI prose and PATCH media types from this. Its scopes are collected in app.ts (API_SCOPES).
import type { ProblemType } from './problems/problems.ts';

export interface FeatureContribution {
  /** Problem types the feature raises, beside the generic ones of problems.ts. */
  problemTypes: Readonly<Record<string, ProblemType>>;
  openApi: {
    /** A section of the API description (Markdown). */
    description: string;
    /** Tags its operations use, in the order the reference page lists them. */
    tags: readonly string[];
    /** OpenAPI 3.1 `webhooks`: requests the service sends. */
    webhooks?: Readonly<Record<string, unknown>>;
  };
  /** Media types of PATCH documents it accepts: parsed as JSON, and bodies of PATCH only. */
  patchMediaTypes?: readonly string[];
}
