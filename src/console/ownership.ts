// Whether a console user owns a client, as the public API says (GET /api/me/clients with the user's own
// token): asked when an owner opens a client's portal and again each time that portal's client token is
// minted anew, so an owner removed from the client loses its portal within one access token's lifetime.
import type { FastifyInstance } from 'fastify';
import { Problem } from '../http/problems/problems.ts';
import type { ConsoleSession } from './sessions.ts';
import type { SessionTokens } from './session-tokens.ts';

const OWNED_PAGE_LIMIT = 100;

interface OwnedPage {
  Items: { ClientId: string }[];
  _links?: { next?: { href: string } };
}

export async function ownsClient(
  app: FastifyInstance,
  tokens: SessionTokens,
  owner: { session: ConsoleSession; host: string | undefined },
  clientId: string,
): Promise<boolean> {
  let url: string | undefined = `/api/me/clients?limit=${OWNED_PAGE_LIMIT}`;
  let session = owner.session;
  while (url) {
    const target: string = url;
    const answer = await tokens.asUser(session, (access) =>
      app.inject({
        method: 'GET',
        url: target,
        headers: {
          authorization: `Bearer ${access}`,
          accept: 'application/json',
          ...(owner.host && { host: owner.host }),
        },
      }),
    );
    if (!answer || answer.response.statusCode === 401)
      throw new Problem('unauthorized', 'the console session has ended: sign in again');
    if (answer.response.statusCode !== 200)
      throw new Error(`GET /api/me/clients answered ${answer.response.statusCode}`);
    session = answer.session;
    const page = answer.response.json() as OwnedPage;
    if (page.Items.some((item) => item.ClientId === clientId)) return true;
    const next = page._links?.next?.href;
    url = next === undefined ? undefined : new URL(next).pathname + new URL(next).search;
  }
  return false;
}
