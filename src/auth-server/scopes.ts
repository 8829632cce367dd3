// The scopes Signet knows, with the plain words the consent page shows for each, and the resource
// servers (RFC 8707) that tokens can be issued for.

/** Scope → what the user is agreeing to, in plain words. */
export const SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  openid: 'Sign you in with your Signet account',
  profile: 'See your name',
  email: 'See your e-mail address',
  offline_access: 'Keep access while you are away',
  'orders:read': 'See your orders',
  'orders:write': 'Create, change, pay and cancel your orders',
  'events:read': 'Read the events of your orders',
  'webhooks:manage': 'Register and manage webhook endpoints',
};

/** Every scope of the resource API. */
export const ORDERS_SCOPES = ['orders:read', 'orders:write', 'events:read', 'webhooks:manage'];

export interface ResourceDefinition {
  /** RFC 8707 resource indicator; also the `aud` of its access tokens. */
  uri: string;
  scopes: string[];
}

export function resourceDefinitions(apiResource: string): ResourceDefinition[] {
  return [{ uri: apiResource, scopes: ORDERS_SCOPES }];
}

/** `<resource_uri>/.default` (the contract's client-credentials scope): every scope the client may have there. */
export function parseDefaultScope(scope: string, resources: ResourceDefinition[]): ResourceDefinition | undefined {
  if (!scope.endsWith('/.default')) return undefined;
  const uri = scope.slice(0, -'/.default'.length);
  return resources.find((r) => r.uri === uri);
}

export function describeScope(scope: string): string {
  return SCOPE_DESCRIPTIONS[scope] ?? scope;
}
