// The console's own OAuth client, `signet-console`, created or brought up to date at every start.
// It is a public client (token_endpoint_auth_method none, PKCE S256): several instances behind a load
// balancer share it, so a secret would have to be configured on each and could only be as safe as that
// configuration; and nothing is gained by one, since its tokens never leave the server (the backend-for-
// frontend keeps them, OAuth 2.0 for Browser-Based Apps §6.1). First-party: the user is not asked to consent.
import type { Db } from '../db/executor.ts';
import {
  createClient,
  findClient,
  lockClient,
  updateClientRow,
  type NewClient,
} from '../auth-server/clients/clients.repository.ts';

export const CONSOLE_CLIENT_ID = 'signet-console';

/** The registration the console needs, for the issuer's origin (`http://127.0.0.1:3000`). */
export function consoleClient(origin: string, scopes: readonly string[]): NewClient {
  return {
    name: 'Signet console',
    type: 'public',
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: [`${origin}/console/callback`],
    postLogoutRedirectUris: [`${origin}/console/signed-out`],
    scopes: [...scopes],
    corsOrigins: [],
    firstParty: true,
  };
}

/** Idempotent: creates the client, or sets what may change (URIs after a PUBLIC_URL change, scopes). */
export async function ensureConsoleClient(db: Db, wanted: NewClient): Promise<void> {
  const changes = {
    name: wanted.name,
    redirectUris: wanted.redirectUris,
    postLogoutRedirectUris: wanted.postLogoutRedirectUris,
    scopes: wanted.scopes,
    firstParty: true,
  };
  if (!(await findClient(db, CONSOLE_CLIENT_ID))) {
    try {
      await createClient(db, wanted, { clientId: CONSOLE_CLIENT_ID });
      return;
    } catch (err) {
      // Another instance starting at the same moment created it first: update theirs below.
      if (!(await findClient(db, CONSOLE_CLIENT_ID))) throw err;
    }
  }
  await db.transaction().execute(async (trx) => {
    await lockClient(trx, CONSOLE_CLIENT_ID);
    await updateClientRow(trx, CONSOLE_CLIENT_ID, changes);
  });
}
