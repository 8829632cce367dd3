// The console's sign-in over raw HTTP, as a browser does it (/console/login → Signet's login page →
// /console/callback), for tests that look at the redirects, cookies and logs rather than the pages.
import type { AuthTestServer } from './auth-server.ts';
import { fetchWithin } from './http.ts';
import { CookieJar, runAuthorizationFlow } from './oauth-flow.ts';

export interface ConsoleSignIn {
  /** The browser's cookies afterwards: the console session's, and Signet's own session at /oauth. */
  jar: CookieJar;
  /** Where /console/callback sent the browser (the return_to kept by /console/login), and its status. */
  location: string | null;
  status: number;
  /** The callback URL the authorization server redirected to (with its code and state). */
  callback: URL;
}

export async function consoleSignIn(
  server: AuthTestServer,
  user: { email: string; password: string },
  options: { returnTo?: string; jar?: CookieJar } = {},
): Promise<ConsoleSignIn> {
  const jar = options.jar ?? new CookieJar();
  const query = options.returnTo === undefined ? '' : `?return_to=${encodeURIComponent(options.returnTo)}`;
  const login = await fetchWithin(`${server.url}/console/login${query}`, { redirect: 'manual' });
  jar.store(login);
  const authorize = new URL(login.headers.get('location')!, server.url);
  const flow = await runAuthorizationFlow({
    base: server.url,
    authorizeQuery: authorize.search.slice(1),
    email: user.email,
    password: user.password,
    jar,
    stopAt: (target) => target.pathname === '/console/callback',
  });
  const answer = await fetchWithin(flow.callback.href, { redirect: 'manual', headers: { cookie: jar.header() } });
  jar.store(answer);
  return { jar, location: answer.headers.get('location'), status: answer.status, callback: flow.callback };
}
