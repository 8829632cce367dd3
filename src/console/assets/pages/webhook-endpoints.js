// Webhook endpoints across all clients (docs/guides/portal.md): a server-paged list filtered by client, and one
// endpoint's page with its client's delivery stats, disable (confirmed first) and enable (docs/guides/admin-api.md,
// Webhook endpoints). The client filter lives in the URL query.
import { html, useEffect, useState } from '../html.js';
import { api, enc } from '../api.js';
import { ConfirmDialog, DataTable, ErrorBox, Field, Loading, Notice, useConfirm } from '../components.js';
import { Time, useUrlQuery, withQuery } from './operator-common.js';

/** Why an endpoint is off, in words (DisabledReason). */
const REASONS = {
  manual: 'by its owner',
  admin: 'by an admin',
  gone: 'the receiver answered 410 Gone',
  failing: 'it kept failing',
};

function stateOf(endpoint) {
  if (endpoint.Enabled) return 'Enabled';
  const reason = REASONS[endpoint.DisabledReason];
  return reason ? `Disabled (${reason})` : 'Disabled';
}

const events = (e) => (e.Events.length ? e.Events.join(', ') : 'none');

export function WebhookEndpointsPage() {
  const [query, push] = useUrlQuery();
  const [clientId, setClientId] = useState(query.client_id ?? '');
  useEffect(() => setClientId(query.client_id ?? ''), [query.client_id]);
  const filter = query.client_id;
  const submit = (event) => {
    event.preventDefault();
    push({ client_id: clientId.trim() });
  };
  const columns = [
    {
      label: 'URL',
      value: (e) => html`<a href=${`/console/webhook-endpoints/${enc(e.Id)}`}>${e.Url}</a>`,
    },
    { label: 'Client', value: (e) => html`<code>${e.ClientId}</code>` },
    { label: 'Events', value: events },
    { label: 'State', value: stateOf },
    { label: 'Created', value: (e) => html`<${Time} value=${e.CreatedAtUtc} />` },
  ];
  return html` <form role="search" aria-label="Webhook endpoints" onSubmit=${submit}>
      <${Field}
        label="Client ID"
        type="search"
        value=${clientId}
        onInput=${setClientId}
        hint="Only this client’s endpoints; leave empty for every client."
        autocomplete="off"
      />
      <div class="actions">
        <button type="submit">Filter</button>
        ${filter ? html`<button type="button" class="secondary" onClick=${() => push({})}>Show every client</button>` : null}
      </div>
    </form>
    <${DataTable}
      path=${withQuery('/admin/webhook-endpoints?limit=20', { client_id: filter })}
      columns=${columns}
      caption=${filter ? `Webhook endpoints of ${filter}` : 'Webhook endpoints of every client, oldest first'}
      empty=${filter ? `Client ${filter} has no webhook endpoints.` : 'No client has a webhook endpoint yet.'}
    />`;
}

/** The client's attempts and deliveries over the last 24 hours (/api/admin/webhook-stats). */
function ClientStats({ clientId }) {
  const [state, setState] = useState({ loading: true });
  const load = async () => {
    setState({ loading: true });
    try {
      setState({ stats: await api(withQuery('/admin/webhook-stats', { client_id: clientId })) });
    } catch (error) {
      setState({ error });
    }
  };
  useEffect(() => {
    load();
  }, [clientId]);
  if (state.loading) return html`<${Loading} label="Loading the stats…" />`;
  if (state.error) return html`<${ErrorBox} error=${state.error} onRetry=${load} />`;
  const { Attempts, Deliveries, SinceUtc, UntilUtc } = state.stats;
  const failed = Object.entries(Attempts.Failed);
  const failedTotal = failed.reduce((sum, [, n]) => sum + n, 0);
  const rows = [
    ['Attempts succeeded', Attempts.Succeeded],
    ['Attempts failed', failedTotal],
    ...failed.map(([kind, n]) => [`Attempts failed: ${kind}`, n]),
    ['Deliveries pending', Deliveries.Pending],
    ['Deliveries succeeded', Deliveries.Succeeded],
    ['Deliveries failed for good', Deliveries.Dead],
  ];
  return html`<table>
    <caption>
      Client ${clientId}, every endpoint, from
      <${Time} value=${SinceUtc} />
      to
      <${Time} value=${UntilUtc} />
    </caption>
    <thead>
      <tr>
        <th scope="col">Count</th>
        <th scope="col">Number</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        ([label, n]) =>
          html`<tr key=${label}>
            <th scope="row">${label}</th>
            <td>${n}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function EndpointDetails({ endpoint }) {
  return html`<dl class="details">
    <dt>URL</dt>
    <dd><code>${endpoint.Url}</code></dd>
    <dt>Client</dt>
    <dd>
      <a href=${`/console/webhook-endpoints?client_id=${enc(endpoint.ClientId)}`}><code>${endpoint.ClientId}</code></a>
    </dd>
    <dt>State</dt>
    <dd>${stateOf(endpoint)}</dd>
    <dt>Events</dt>
    <dd>${events(endpoint)}</dd>
    <dt>Description</dt>
    <dd>${endpoint.Description || 'none'}</dd>
    <dt>Failing since</dt>
    <dd><${Time} value=${endpoint.FailingSinceUtc} none="not failing" /></dd>
    <dt>Created</dt>
    <dd><${Time} value=${endpoint.CreatedAtUtc} /></dd>
    <dt>Updated</dt>
    <dd><${Time} value=${endpoint.UpdatedAtUtc} /></dd>
  </dl>`;
}

export function WebhookEndpointPage({ params }) {
  const [state, setState] = useState({ loading: true });
  const [notice, setNotice] = useState('');
  const [error, setError] = useState(null);
  const { ask, dialogProps } = useConfirm();
  const base = `/admin/webhook-endpoints/${enc(params.id)}`;
  const load = async () => {
    setState({ loading: true });
    try {
      setState({ endpoint: await api(base) });
    } catch (err) {
      setState({ error: err });
    }
  };
  useEffect(() => {
    load();
  }, [params.id]);
  const toggle = async (action, message) => {
    setNotice('');
    setError(null);
    try {
      setState({ endpoint: await api(`${base}/${action}`, { method: 'POST' }) });
      setNotice(message);
    } catch (err) {
      setError(err);
    }
  };
  const back = html`<p><a href="/console/webhook-endpoints">All webhook endpoints</a></p>`;
  if (state.loading) return html`${back}<${Loading} label="Loading the endpoint…" />`;
  if (state.error) return html`${back}<${ErrorBox} error=${state.error} onRetry=${load} />`;
  const endpoint = state.endpoint;
  const disable = () =>
    ask({
      title: `Disable ${endpoint.Url}?`,
      message: `Nothing more is sent to it and its waiting deliveries fail (client ${endpoint.ClientId} can recover them once it is enabled again).`,
      confirmLabel: 'Disable endpoint',
      action: () => toggle('disable', 'Endpoint disabled: nothing more is sent to it.'),
    });
  const enable = () => toggle('enable', 'Endpoint enabled: new events are sent to it again.');
  return html`
    ${back}
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    <section class="panel" aria-labelledby="endpoint-title">
      <h2 id="endpoint-title">Webhook endpoint <code>${endpoint.Id}</code></h2>
      <${EndpointDetails} endpoint=${endpoint} />
      <div class="actions">
        ${
          endpoint.Enabled
            ? html`<button type="button" class="danger" onClick=${disable}>Disable endpoint</button>`
            : html`<button type="button" onClick=${enable}>Enable endpoint</button>`
        }
        <a class="button-link" href=${`/console/deliveries?endpoint_id=${enc(endpoint.Id)}`}>Delivery log of this endpoint</a>
      </div>
    </section>
    <section aria-labelledby="stats-title">
      <h2 id="stats-title">Deliveries of client ${endpoint.ClientId} in the last 24 hours</h2>
      <${ClientStats} clientId=${endpoint.ClientId} />
    </section>
    <${ConfirmDialog} ...${dialogProps} />`;
}
