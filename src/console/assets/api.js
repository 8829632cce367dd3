// The console's one way to the APIs: /console/api/… (the backend-for-frontend adds the access token).
// Sends the CSRF header from /console/session; a problem+json answer (RFC 9457) becomes an ApiError
// carrying its `detail`, `status` and `errors`.

/** Every path segment or query value built from data goes through this (RFC 3986 §2.1). */
export const enc = encodeURIComponent;

let csrfToken = '';

/** Set once by app.js from GET /console/session. */
export function setCsrfToken(token) {
  csrfToken = token;
}

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.type = problem.type;
    this.title = problem.title;
    this.detail = problem.detail || problem.title || `The request failed (HTTP ${status}).`;
    this.errors = problem.errors || [];
  }
}

/**
 * `/admin/users`, `/api/admin/users` or a link from a response (`http://host/api/admin/users?cursor=…`)
 * → `/console/api/admin/users…`.
 */
export function consoleUrl(target) {
  const url = new URL(target, location.origin);
  let path = url.pathname;
  if (path.startsWith('/console/api/')) return `${path}${url.search}`;
  if (!path.startsWith('/api/')) path = `/api${path.startsWith('/') ? '' : '/'}${path}`;
  return `/console${path}${url.search}`;
}

/**
 * Calls the API; resolves with `{ status, data, headers }`. `body` is sent as JSON. Throws ApiError on
 * 4xx/5xx; on 401 (the session ended) it also tells the app, which sends the user to sign in again.
 */
export async function apiFetch(target, { method = 'GET', body, headers = {} } = {}) {
  const init = {
    method,
    credentials: 'same-origin',
    headers: { accept: 'application/json', 'x-signet-console-csrf': csrfToken, ...headers },
  };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(consoleUrl(target), init);
  const type = response.headers.get('content-type') || '';
  const data = type.includes('json') && response.status !== 204 ? await response.json() : null;
  if (!response.ok) {
    if (response.status === 401) dispatchEvent(new CustomEvent('signet:session-ended'));
    throw new ApiError(response.status, data || {});
  }
  return { status: response.status, data, headers: response.headers };
}

/** The response body only. */
export async function api(target, options) {
  return (await apiFetch(target, options)).data;
}
