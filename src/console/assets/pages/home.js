// The console's home. Operators see the overview (charts over the last 24 h, pages/overview.js; docs/guides/portal.md);
// everyone else a plain welcome with links to the pages their account may use.
import { html, useEffect, useState } from '../html.js';
import { ErrorBox, Loading } from '../components.js';

/**
 * The overview charts for operators; nothing for other users (the API would refuse them: 403). Loaded
 * on demand: other users never download the charts and uPlot (about 45 KB compressed).
 */
export function OverviewSlot({ session }) {
  const admin = session.roles.includes('admin') || session.roles.includes('auditor');
  const [loaded, setLoaded] = useState({});
  useEffect(() => {
    if (admin)
      import('./overview.js').then(
        (module) => setLoaded({ module }),
        (error) => setLoaded({ error }),
      );
  }, [admin]);
  if (!admin) return null;
  if (loaded.error) return html`<${ErrorBox} error=${loaded.error} />`;
  if (!loaded.module) return html`<${Loading} label="Loading the overview…" />`;
  return html`<${loaded.module.Overview} />`;
}

/** The nav's pages this user may open, but home itself (`nav`: what app.js shows in the nav for this session). */
function PagesForYou({ nav }) {
  const pages = nav.filter((r) => r.path !== '/console');
  if (pages.length === 0) return null;
  return html`<ul>
    ${pages.map((r) => html`<li><a href=${r.path}>${r.title}</a></li>`)}
  </ul>`;
}

export function HomePage({ session, nav }) {
  const admin = session.roles.includes('admin') || session.roles.includes('auditor');
  return html`<p>Welcome, ${session.name || session.email}.</p>
    ${
      admin
        ? null
        : html`<p>Your account has no operator role: the operator pages are not available to you.</p>
            <${PagesForYou} nav=${nav} />`
    }
    <${OverviewSlot} session=${session} />`;
}
