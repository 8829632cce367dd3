// openid-client 6 as a relying party of the test server: discovery of its issuer, with the client's
// credentials (a public client authenticates with none).
import * as client from 'openid-client';
import type { AuthTestServer } from './auth-server.ts';

/** The test server speaks plain HTTP on 127.0.0.1; openid-client refuses that unless told. */
export const INSECURE = { execute: [client.allowInsecureRequests] };

export function discover(
  server: AuthTestServer,
  registered: { clientId: string; clientSecret?: string | undefined },
): Promise<client.Configuration> {
  if (registered.clientSecret === undefined)
    return client.discovery(new URL(server.issuer), registered.clientId, undefined, client.None(), INSECURE);
  return client.discovery(new URL(server.issuer), registered.clientId, registered.clientSecret, undefined, INSECURE);
}
