// The integrator portal's entry (/console/portal). In a portal session: which client this is and its pages.
// Signed in without one: the clients the user owns (GET /api/me/clients), each with a button that asks the
// backend-for-frontend to open that client's portal (it checks the ownership itself, with the same API).
import { html, useState } from '../html.js';
import { ApiError } from '../api.js';
import { DataTable, ErrorBox, Notice } from '../components.js';

const PORTAL_PAGES = [
  ['/console/portal/endpoints', 'Endpoints', 'add, rotate the secret, enable, disable and delete webhook endpoints'],
  ['/console/portal/test', 'Send a test event', 'an example event of any type, to one endpoint'],
  ['/console/portal/deliveries', 'Deliveries', 'every delivery and its attempts; redeliver; recover'],
  ['/console/portal/catalogue', 'Event catalogue', 'each event type, its schema and an example'],
  ['/console/portal/verify', 'Verify deliveries', 'code that checks a delivery’s signature'],
];

/** POST or DELETE /console/portal-sessions (a backend-for-frontend route, not an API call). */
async function portalSessions(method, csrfToken, body) {
  const response = await fetch('/console/portal-sessions', {
    method,
    credentials: 'same-origin',
    headers: {
      accept: 'application/json',
      'x-signet-console-csrf': csrfToken,
      ...(body && { 'content-type': 'application/json' }),
    },
    body: body && JSON.stringify(body),
  });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => ({})));
}

function InPortal({ session }) {
  const { portal } = session;
  const [error, setError] = useState(null);
  const leave = async () => {
    try {
      await portalSessions('DELETE', session.csrf_token);
      location.assign('/console/portal');
    } catch (err) {
      setError(err);
    }
  };
  return html`
    <p>
      You are managing the webhooks of <strong>${portal.client_name}</strong> (client <code>${portal.client_id}</code>).
      This session ends at ${new Date(portal.expires_at).toLocaleTimeString()}.
    </p>
    <ul class="portal-pages">
      ${PORTAL_PAGES.map(([href, label, what]) => html`<li key=${href}><a href=${href}>${label}</a>: ${what}</li>`)}
    </ul>
    ${
      portal.via === 'owner'
        ? html`<p><button type="button" class="secondary" onClick=${leave}>Leave this client’s portal</button></p>`
        : null
    }
    <${ErrorBox} error=${error} />
  `;
}

function ChooseClient({ session }) {
  const [error, setError] = useState(null);
  const [opening, setOpening] = useState('');
  const open = async (client) => {
    setError(null);
    setOpening(client.ClientId);
    try {
      await portalSessions('POST', session.csrf_token, { client_id: client.ClientId });
      location.assign('/console/portal/endpoints'); // a full load: the app reads the portal session
    } catch (err) {
      setOpening('');
      setError(err);
    }
  };
  const columns = [
    { label: 'Client', value: (c) => c.Name },
    { label: 'Client id', value: (c) => html`<code>${c.ClientId}</code>` },
    {
      label: 'Portal',
      value: (c) =>
        html`<button type="button" disabled=${opening !== ''} onClick=${() => open(c)}>
          Open the portal of ${c.Name}
        </button>`,
    },
  ];
  return html`
    <p>The integrator portal manages one client’s webhooks. These are the clients you own:</p>
    <${ErrorBox} error=${error} />
    ${opening ? html`<${Notice}>Opening the portal…</${Notice}>` : null}
    <${DataTable}
      path="/me/clients?limit=20"
      caption="Your clients"
      columns=${columns}
      rowKey=${(c) => c.ClientId}
      empty="You own no client. An administrator can make you a client’s owner."
    />
  `;
}

export function PortalHomePage({ session }) {
  return session.portal ? html`<${InPortal} session=${session} />` : html`<${ChooseClient} session=${session} />`;
}
