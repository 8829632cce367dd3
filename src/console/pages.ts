// The few pages the console renders on the server: sign-out (a form that ends the Signet session too),
// signed out, a sign-in that could not finish, and the portal link's confirmation. No inline script or
// style (the console's CSP).
import type { FastifyReply } from 'fastify';

/** Every server-rendered console page: HTML, never stored by a cache (it may name a user or a client). */
export function sendHtml(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(html);
}

export function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function page(title: string, body: string, script?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Signet console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css">
${script ? `<script type="module" src="${script}"></script>\n` : ''}</head>
<body><main class="standalone">${body}</main></body>
</html>
`;
}

/**
 * OpenID Connect RP-Initiated Logout 1.0 §2: the parameters go in a POST body, never a URL. No
 * id_token_hint: Signet turns a POST to its end_session endpoint into a GET with the form as its query
 * (request-shaping.ts), which would put the ID token in a URL; client_id names the client instead (§2).
 */
export function signingOutPage(endSessionPath: string, clientId: string, postLogoutUri: string): string {
  return page(
    'Signing out',
    `<h1>Signing out</h1>
<p>You are signed out of the console. Signet will now end your Signet session as well.</p>
<form id="end-session" method="post" action="${escape(endSessionPath)}">
<input type="hidden" name="client_id" value="${escape(clientId)}">
<input type="hidden" name="post_logout_redirect_uri" value="${escape(postLogoutUri)}">
<button type="submit">Continue signing out</button>
</form>`,
    '/console/assets/logout.js',
  );
}

export function signedOutPage(): string {
  return page(
    'Signed out',
    `<h1>You are signed out</h1>
<p>Your console session and your Signet session have ended.</p>
<p><a href="/console/login">Sign in again</a></p>`,
  );
}

export function signInFailedPage(reason: string): string {
  return page(
    'Sign-in did not finish',
    `<h1>Sign-in did not finish</h1>
<p role="alert">${escape(reason)}</p>
<p><a href="/console/login">Try again</a></p>`,
  );
}

/** After signing out of a portal opened by a link: there is no Signet session to end. */
export function portalClosedPage(): string {
  return page(
    'Portal closed',
    `<h1>You have left the portal</h1>
<p>Your portal session has ended. To open the portal again, ask the application that gave you the link for a new one.</p>`,
  );
}

/** A page that only says what happened (a refused portal link, an ended portal). */
export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escape(title)}</h1>\n<p role="alert">${escape(message)}</p>`);
}

/**
 * GET /console/portal-links/:token: the link is NOT used yet. A link scanner (chat unfurls, mail
 * "safe links") or a cross-site GET only sees this page; the portal opens when the person posts the form
 * (same origin, checked), so the link is neither used up nor able to take over this browser's console.
 * No `action`: the form posts to this page's own URL, the token staying out of the body and of the HTML.
 */
export function portalConfirmPage(clientName: string, signedInAs: string | undefined): string {
  const name = escape(clientName);
  const beside = signedInAs
    ? `<p>You are signed in to the console as ${escape(signedInAs)}. The portal will show in this browser instead of the console until you leave it; your console session stays and comes back then, and the portal never acts with your rights.</p>\n`
    : '';
  return page(
    `Open the portal of ${clientName}`,
    `<h1>Open the portal of ${name}</h1>
<p>This link opens the webhook portal of ${name} for one hour. It works once.</p>
${beside}<form method="post">
<button type="submit">Open the portal</button>
</form>`,
  );
}
