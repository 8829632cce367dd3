// A user signing in through the login and consent pages, as the authorization-server benchmark measures
// it: the authorization request, each redirect followed by hand with the cookies it set, the login form
// and the consent form posted, until the server sends the browser back to the client. Plain fetch; no
// browser, so what is timed is the server.
import { createHash, randomBytes } from 'node:crypto';

/** RFC 7636 S256: a random verifier and its challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface SignIn {
  base: string;
  /** The authorization request's query string. */
  authorizeQuery: string;
  email: string;
  password: string;
}

export interface SignedIn {
  /** Where the server sent the browser back to: the redirect_uri with code, state and iss. */
  callback: URL;
  /** The HTML pages shown on the way (login, consent), for the caller's checks. */
  pages: { url: string; status: number; html: string }[];
}

const STEP_TIMEOUT_MS = 30_000;
const MAX_STEPS = 12;

export async function signIn(run: SignIn): Promise<SignedIn> {
  const cookies = new Map<string, string>();
  const pages: SignedIn['pages'] = [];
  let url = `${run.base}/oauth/authorize?${run.authorizeQuery}`;
  let form: URLSearchParams | undefined;
  for (let step = 0; step < MAX_STEPS; step += 1) {
    const response = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      body: form,
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
      signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
    });
    keepCookies(response, cookies);
    const location = response.headers.get('location');
    if (location) {
      const target = new URL(location, url);
      if (target.origin !== new URL(run.base).origin) return { callback: target, pages };
      [url, form] = [target.href, undefined];
      continue;
    }
    const html = await response.text();
    pages.push({ url, status: response.status, html });
    if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${html.slice(0, 500)}`);
    [url, form] = formOf(html, url, run);
  }
  throw new Error(`no redirect back to the client after ${MAX_STEPS} steps`);
}

function keepCookies(response: Response, cookies: Map<string, string>): void {
  for (const line of response.headers.getSetCookie()) {
    const [name = '', ...rest] = (line.split(';')[0] ?? '').split('=');
    const value = rest.join('=').trim();
    if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) cookies.delete(name.trim());
    else cookies.set(name.trim(), value);
  }
}

/** The page's form filled in: credentials on the login page, "allow" on the consent page. */
function formOf(html: string, pageUrl: string, run: SignIn): [string, URLSearchParams] {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !csrf) throw new Error(`no form on ${pageUrl}`);
  const fields: Record<string, string> = { csrf };
  if (html.includes('name="password"')) Object.assign(fields, { email: run.email, password: run.password });
  const target = action.replace(/&#(\d+);/g, (_entity, code: string) => String.fromCharCode(Number(code)));
  return [new URL(target, pageUrl).href, new URLSearchParams(fields)];
}
