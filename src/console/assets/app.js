// The console app: reads the session, then routes on the History API. Links to /console/… are handled
// here (back and forward work); focus moves to the page's heading on every navigation.
import { html, render, useEffect, useState } from './html.js';
import { setCsrfToken } from './api.js';
import { ErrorBox, Layout, NotAllowed } from './components.js';
import { allowed, inNav, matchRoute, ROUTES } from './routes.js';

/** Paths the server answers itself: a full page load, not the router. */
const SERVER_PATHS =
  /^\/console\/(login|logout|callback|signed-out|session|api|assets|vendor|portal-links|portal-sessions|portal-ended)(\/|$|\?)/;

export function navigate(to) {
  history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}

function signIn() {
  location.assign(`/console/login?return_to=${encodeURIComponent(location.pathname + location.search)}`);
}

function interceptLinks(event) {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)
    return;
  const link = event.target.closest?.('a[href]');
  if (!link || link.target || link.hasAttribute('download')) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/console') || SERVER_PATHS.test(url.pathname)) return;
  event.preventDefault();
  if (url.pathname + url.search !== location.pathname + location.search) navigate(url.pathname + url.search);
}

function NotFound() {
  return html`<p>There is no such page. <a href="/console">Back to the console home</a></p>`;
}

/**
 * Set when the user submits a form the server answers with a whole page (Sign out): the page is on its way
 * out. A request it started before, answered 401 because that sign-out already ended the session, must
 * not redirect to sign-in: a new navigation would cancel the one the user asked for.
 */
let leaving = false;
document.addEventListener('submit', (event) => {
  // Bubbling to the document, this runs after the form's own handlers: the app's forms prevent the default.
  if (!event.defaultPrevented) leaving = true;
});
// Back-forward cache: a page shown again is no longer leaving.
addEventListener('pageshow', () => {
  leaving = false;
});

/** A portal link's session has no account to sign in with again: its end is a page saying so. */
function sessionEnded(session) {
  const next = session.portal?.via === 'link' ? () => location.assign('/console/portal-ended') : signIn;
  return () => {
    if (!leaving) next();
  };
}

function App({ session }) {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const onPop = () => setPath(location.pathname);
    const ended = sessionEnded(session);
    addEventListener('popstate', onPop);
    addEventListener('signet:session-ended', ended);
    document.addEventListener('click', interceptLinks);
    return () => {
      removeEventListener('popstate', onPop);
      removeEventListener('signet:session-ended', ended);
      document.removeEventListener('click', interceptLinks);
    };
  }, []);
  const found = matchRoute(path);
  const title = found ? found.route.title : 'Not found';
  const first = useState({ done: false })[0];
  useEffect(() => {
    document.title = `${title} · Signet console`;
    // The first load keeps the browser's own focus; later navigations announce the new page by its heading.
    if (first.done) document.getElementById('page-title')?.focus();
    first.done = true;
  }, [path]);
  const nav = ROUTES.filter((r) => inNav(r, session));
  let content;
  if (!found) content = html`<${NotFound} />`;
  else if (!allowed(found.route, session)) content = html`<${NotAllowed} />`;
  else {
    const Page = found.route.component;
    content = html`<${Page} key=${path} session=${session} params=${found.params} nav=${nav} />`;
  }
  return html`<${Layout} session=${session} nav=${nav} current=${found?.route.path} title=${title}>${content}</${Layout}>`;
}

async function start() {
  const root = document.getElementById('app');
  try {
    const response = await fetch('/console/session', {
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
    });
    const session = await response.json();
    if (!session.signed_in) return signIn();
    setCsrfToken(session.csrf_token);
    if (session.portal && location.pathname.replace(/\/$/, '') === '/console')
      history.replaceState(null, '', '/console/portal');
    root.textContent = '';
    render(html`<${App} session=${session} />`, root);
  } catch (error) {
    root.textContent = '';
    render(
      html`<main id="main">
        <h1>Signet console</h1>
        <${ErrorBox} error=${error} />
      </main>`,
      root,
    );
  }
}

start();
