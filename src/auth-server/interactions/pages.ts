// Server-rendered pages of the authorization server: login, consent, logout, errors. No external assets,
// no script; the one stylesheet is inline and allowed by its hash, so the Content-Security-Policy can
// be `default-src 'none'`. Every interpolated value goes through escapeHtml.
import { createHash } from 'node:crypto';

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}
main{max-width:24rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px #0003}
h1{font-size:1.4rem;margin:0 0 1rem}
label{display:block;margin:1rem 0 .25rem;font-weight:600}
input[type=email],input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;font:inherit;border:1px solid #8a8f98;border-radius:4px}
input:focus,button:focus{outline:3px solid #2563eb;outline-offset:2px}
button{margin-top:1.25rem;padding:.6rem 1.2rem;font:inherit;border:0;border-radius:4px;background:#1d4ed8;color:#fff;cursor:pointer}
button.secondary{background:#e5e7eb;color:#1d1f23;margin-left:.5rem}
.error{padding:.75rem;border-radius:4px;background:#fde8e8;color:#8b1a1a}
ul{padding-left:1.25rem}
`;
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Headers for every page; form-action also names the origin a form's redirect chain ends on. */
export function pageHeaders(formActionOrigins: string[] = []): Record<string, string> {
  const formAction = ["'self'", ...formActionOrigins].join(' ');
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src ${STYLE_HASH}; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  };
}

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)} · Signet</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

function errorBox(message: string | undefined): string {
  return message ? `<p class="error" role="alert" id="form-error">${escapeHtml(message)}</p>` : '';
}

export interface LoginPage {
  action: string;
  csrf: string;
  clientName: string;
  email?: string;
  error?: string;
}

export function renderLoginPage(page: LoginPage): string {
  const described = page.error ? ' aria-describedby="form-error"' : '';
  return layout(
    'Sign in',
    `<h1>Sign in to continue to ${escapeHtml(page.clientName)}</h1>${errorBox(page.error)}
<form method="post" action="${escapeHtml(page.action)}" novalidate>
<input type="hidden" name="csrf" value="${escapeHtml(page.csrf)}">
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required autofocus value="${escapeHtml(page.email ?? '')}"${described}>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required${described}>
<button type="submit">Sign in</button>
</form>`,
  );
}

interface ConsentPage {
  action: string;
  abortAction: string;
  csrf: string;
  clientName: string;
  scopes: string[];
}

export function renderConsentPage(page: ConsentPage): string {
  const items = page.scopes.map((s) => `<li>${escapeHtml(s)}</li>`).join('');
  return layout(
    'Allow access',
    `<h1>${escapeHtml(page.clientName)} wants to</h1><ul>${items}</ul>
<p>Your decision is remembered for this application until you sign out or it is revoked.</p>
<form method="post" action="${escapeHtml(page.action)}"><input type="hidden" name="csrf" value="${escapeHtml(page.csrf)}"><button type="submit" autofocus>Allow</button>
<button type="submit" class="secondary" formaction="${escapeHtml(page.abortAction)}">Deny</button></form>`,
  );
}

/** `requestId` (faults only) lets support find the logged cause. */
export function renderErrorPage(error: string, description: string | undefined, requestId?: string): string {
  const reference = requestId ? ` Request id: <code>${escapeHtml(requestId)}</code>.` : '';
  return layout(
    'Error',
    `<h1>Something went wrong</h1>${errorBox(description ?? error)}<p>Error code: <code>${escapeHtml(error)}</code>.${reference} Return to the application and try again.</p>`,
  );
}

/** `form` is oidc-provider's hidden logout form (id op.logoutForm, with its own anti-CSRF token). */
export function renderLogoutPage(form: string): string {
  return layout(
    'Sign out',
    `<h1>Sign out of Signet?</h1>${form}<button type="submit" form="op.logoutForm" name="logout" value="yes" autofocus>Sign out</button><button type="submit" form="op.logoutForm" class="secondary">Stay signed in</button>`,
  );
}

export function renderLoggedOutPage(): string {
  return layout('Signed out', '<h1>You are signed out</h1><p>You can close this window.</p>');
}
