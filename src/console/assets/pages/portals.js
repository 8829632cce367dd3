// Portal links and sessions (docs/guides/admin-api.md, "Portal links and sessions"): the integrator portal's open
// sessions and the links clients issued, optionally of one client; end a session or revoke a link, each confirmed
// first. The client filter lives in the URL query, so reload and back/forward keep it.
import { html, useState } from '../html.js';
import { apiFetch, enc } from '../api.js';
import { ConfirmDialog, DataTable, ErrorBox, Field, Notice, useConfirm } from '../components.js';
import { Time, useUrlQuery, withQuery } from './operator-common.js';

const customerOf = (item) => (item.CustomerId ? html`<code>${item.CustomerId}</code>` : 'staff (whole client)');

export function PortalsPage() {
  const [query, push] = useUrlQuery();
  const [text, setText] = useState(query.client ?? '');
  const [reloadKey, setReloadKey] = useState(0);
  const [notice, setNotice] = useState('');
  const [error, setError] = useState(null);
  const { ask, dialogProps } = useConfirm();
  const run = async (path, message) => {
    setNotice('');
    setError(null);
    try {
      await apiFetch(path, { method: 'DELETE' });
      setNotice(message);
    } catch (err) {
      setError(err);
    }
    setReloadKey((k) => k + 1);
  };
  const endSession = (s) =>
    ask({
      title: `End portal session ${s.Id}?`,
      message: `The portal of ${s.ClientName} open in that browser stops at its next request.`,
      confirmLabel: 'End session',
      action: () => run(`/admin/portal-sessions/${enc(s.Id)}`, `Portal session ${s.Id} ended.`),
    });
  const revokeLink = (l) =>
    ask({
      title: `Revoke portal link ${l.Id}?`,
      message: 'It opens nothing any more, and the portal session it opened ends at once.',
      confirmLabel: 'Revoke link',
      action: () => run(`/admin/portal-links/${enc(l.Id)}`, `Portal link ${l.Id} revoked.`),
    });
  const sessionColumns = [
    { label: 'Session', value: (s) => html`<code>${s.Id}</code>` },
    { label: 'Client', value: (s) => html`${s.ClientName} <code>${s.ClientId}</code>` },
    { label: 'Customer', value: customerOf },
    { label: 'Opened by', value: (s) => (s.Via === 'owner' ? 'its owner' : html`link <code>${s.LinkId}</code>`) },
    { label: 'Expires', value: (s) => html`<${Time} value=${s.ExpiresAtUtc} />` },
    {
      label: 'Actions',
      value: (s) =>
        html`<button
          type="button"
          class="danger"
          aria-label=${`End portal session ${s.Id}`}
          onClick=${() => endSession(s)}
        >
          End session
        </button>`,
    },
  ];
  const linkColumns = [
    { label: 'Link', value: (l) => html`<code>${l.Id}</code>` },
    { label: 'Client', value: (l) => html`<code>${l.ClientId}</code>` },
    { label: 'Customer', value: customerOf },
    { label: 'State', value: (l) => l.State },
    { label: 'Issued', value: (l) => html`<${Time} value=${l.CreatedAtUtc} />` },
    {
      label: 'Actions',
      value: (l) =>
        l.State === 'revoked'
          ? 'revoked'
          : html`<button
              type="button"
              class="danger"
              aria-label=${`Revoke portal link ${l.Id}`}
              onClick=${() => revokeLink(l)}
            >
              Revoke link
            </button>`,
    },
  ];
  const submit = (event) => {
    event.preventDefault();
    push({ client: text.trim() || undefined });
  };
  return html`
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    <form role="search" aria-label="Portals of a client" onSubmit=${submit}>
      <${Field} label="Client ID (empty: every client)" value=${text} onInput=${setText} autocomplete="off" />
      <button type="submit">Show portals</button>
    </form>
    <section class="panel" aria-labelledby="portal-sessions-title">
      <h2 id="portal-sessions-title">Open portal sessions</h2>
      <${DataTable}
        path=${withQuery('/admin/portal-sessions?limit=20', { client_id: query.client })}
        columns=${sessionColumns}
        caption="Open portal sessions"
        empty="No portal session is open."
        reloadKey=${reloadKey}
      />
    </section>
    <section class="panel" aria-labelledby="portal-links-title">
      <h2 id="portal-links-title">Portal links</h2>
      <${DataTable}
        path=${withQuery('/admin/portal-links?limit=20', { client_id: query.client })}
        columns=${linkColumns}
        caption="Portal links issued"
        empty="No portal link on file."
        reloadKey=${reloadKey}
      />
    </section>
    <${ConfirmDialog} ...${dialogProps} />`;
}
