// Drives the authorization code flow over raw HTTP the way a browser would: follows redirects by hand,
// keeps cookies, submits the login and consent forms. Returns the final redirect to the client.
import { createHash, randomBytes } from 'node:crypto';
import { fetchWithin } from './http.ts';

export class CookieJar {
  readonly #cookies = new Map<string, string>();
  store(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair = ''] = header.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(header) || value === '') this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface FlowResult {
  /** The URL the user agent was finally sent to (the client's redirect_uri with code, state, iss). */
  callback: URL;
  /** Status and body of each page shown on the way (for assertions on the pages). */
  pages: { url: string; status: number; html: string }[];
  jar: CookieJar;
}

export interface FlowOptions {
  base: string;
  /** Query string of the authorization request (without the leading `?`). */
  authorizeQuery: string;
  email: string;
  password: string;
  jar?: CookieJar;
  /** Deny instead of allow on the consent page. */
  deny?: boolean;
  /** A redirect on our own origin that ends the flow too (a client served from the same origin, the console). */
  stopAt?: (target: URL) => boolean;
  /**
   * Origins of several instances of one service (one PUBLIC_URL, `base`): each request of the flow goes to the
   * next of them in turn, as a load balancer without affinity would send it.
   */
  spread?: string[];
}

const MAX_STEPS = 12;

export async function runAuthorizationFlow(options: FlowOptions): Promise<FlowResult> {
  const jar = options.jar ?? new CookieJar();
  const pages: FlowResult['pages'] = [];
  let next: { url: string; form?: URLSearchParams } = {
    url: `${options.base}/oauth/authorize?${options.authorizeQuery}`,
  };
  for (let step = 0; step < MAX_STEPS; step += 1) {
    // fetchWithin: each page or redirect has a deadline, so a stuck server fails the flow naming the step.
    const response = await fetchWithin(atInstance(next.url, options.spread, step), {
      method: next.form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { cookie: jar.header(), ...(next.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: next.form?.toString(),
    });
    jar.store(response);
    const location = response.headers.get('location');
    if (location) {
      const target = new URL(location, next.url);
      if (!target.href.startsWith(options.base) || options.stopAt?.(target)) return { callback: target, pages, jar };
      next = { url: target.href };
      continue;
    }
    const html = await response.text();
    pages.push({ url: next.url, status: response.status, html });
    if (response.status !== 200)
      throw new FlowError(`page ${next.url} answered ${response.status}: ${html.slice(0, 2000)}`, pages);
    next = submit(html, next.url, options);
  }
  throw new FlowError('too many steps', pages);
}

function atInstance(url: string, origins: string[] | undefined, step: number): string {
  if (!origins?.length) return url;
  const moved = new URL(url);
  const origin = new URL(origins[step % origins.length]!);
  moved.host = origin.host;
  return moved.href;
}

export class FlowError extends Error {
  readonly pages: FlowResult['pages'];
  constructor(message: string, pages: FlowResult['pages']) {
    super(message);
    this.pages = pages;
  }
}

/** Fills the page's form: the login form gets the credentials, the consent form is allowed (or denied). */
function submit(html: string, pageUrl: string, options: FlowOptions): { url: string; form: URLSearchParams } {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !csrf) throw new FlowError(`no form on ${pageUrl}`, [{ url: pageUrl, status: 200, html }]);
  const form = new URLSearchParams({ csrf });
  let target = action;
  if (html.includes('name="password"')) {
    form.set('email', options.email);
    form.set('password', options.password);
  } else if (options.deny) {
    target = /formaction="([^"]+)"/.exec(html)?.[1] ?? action;
  }
  return {
    url: new URL(
      target.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c))),
      pageUrl,
    ).href,
    form,
  };
}
