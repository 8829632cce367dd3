// The delivery log (docs/guides/portal.md): every client's deliveries newest first in server pages (GET
// /api/admin/webhook-deliveries), filtered by endpoint, client, event, state, event type and time. The
// filters live in the URL query under the API's own names (times as RFC 3339 UTC), so reload and
// back/forward keep them and other pages link here (`?endpoint_id=…`, `?event_id=…`). With an endpoint
// filter the page also offers "Recover since…" for that endpoint.
import { html, useState } from '../html.js';
import { enc } from '../api.js';
import { useCatalogue } from '../catalogue.js';
import { DataTable, ErrorBox, Field } from '../components.js';
import {
  FilterActions,
  filterCaption,
  TimeRangeFields,
  Time,
  useFilterForm,
  useUrlFilters,
  withQuery,
} from './operator-common.js';
import { RecoverForm, STATE_OPTIONS, typeOptions } from './log-common.js';

/** The API's filter names, in the URL as in the API call. */
const FILTERS = ['endpoint_id', 'client_id', 'event_id', 'state', 'event_type', 'since', 'until'];

const LABELS = { endpoint_id: 'endpoint', client_id: 'client', event_id: 'event', event_type: 'event type' };

function Filters({ query, types, onApply }) {
  const { form, set, submit } = useFilterForm(query, onApply);
  return html`<form role="search" aria-label="Delivery log" class="filters" onSubmit=${submit}>
    <${Field}
      label="Endpoint ID"
      value=${form.endpoint_id}
      onInput=${set('endpoint_id')}
      hint="whep_…"
      autocomplete="off"
    />
    <${Field} label="Client ID" value=${form.client_id} onInput=${set('client_id')} autocomplete="off" />
    <${Field} label="Event ID" value=${form.event_id} onInput=${set('event_id')} hint="evt_…" autocomplete="off" />
    <${Field} label="State" type="select" value=${form.state} onInput=${set('state')} options=${STATE_OPTIONS} />
    <${Field}
      label="Event type"
      type="select"
      value=${form.event_type}
      onInput=${set('event_type')}
      options=${typeOptions(types, form.event_type)}
    />
    <${TimeRangeFields}
      form=${form}
      set=${set}
      labels=${['Created since', 'Created until']}
      hints=${['Your local time; deliveries created at or after it.', 'Your local time; deliveries created before it.']}
    />
    <${FilterActions} onClear=${() => onApply({})} />
  </form>`;
}

/** The last outcome in words: the status code, or the error. */
function lastOutcome(d) {
  if (d.LastStatusCode !== null && d.LastError) return `${d.LastStatusCode}: ${d.LastError}`;
  if (d.LastStatusCode !== null) return String(d.LastStatusCode);
  return d.LastError ?? '—';
}

const COLUMNS = [
  { label: 'Created (UTC)', value: (d) => html`<${Time} value=${d.CreatedAtUtc} />` },
  {
    label: 'Delivery',
    value: (d) => html`<a href=${`/console/deliveries/${enc(d.Id)}`}><code>${d.Id}</code></a>`,
  },
  {
    label: 'Event',
    value: (d) =>
      html`<a href=${`/console/events/${enc(d.EventId)}`} aria-label=${`${d.EventType} event ${d.EventId}`}
        >${d.EventType}</a
      >`,
  },
  { label: 'State', value: (d) => d.State },
  { label: 'Attempts', value: (d) => d.AttemptCount },
  { label: 'Last outcome', value: lastOutcome },
  {
    label: 'Endpoint',
    value: (d) => html`<a href=${`/console/webhook-endpoints/${enc(d.EndpointId)}`}><code>${d.EndpointId}</code></a>`,
  },
  { label: 'Client', value: (d) => html`<code>${d.ClientId}</code>` },
];

export function DeliveriesPage() {
  const { filters, active, key, apply } = useUrlFilters(FILTERS);
  const catalogue = useCatalogue();
  const [reloadKey, setReloadKey] = useState(0);
  const path = withQuery('/admin/webhook-deliveries?limit=20', filters);
  // Keyed by the URL's filters only (back/forward show what the list shows): the catalogue arriving
  // later must not remount the form and wipe what the user is typing.
  return html`<${ErrorBox} error=${catalogue.error} />
    <${Filters} key=${key} query=${filters} types=${catalogue.types ?? []} onApply=${apply} />
    <div class="log-list">
      <${DataTable}
        path=${path}
        columns=${COLUMNS}
        reloadKey=${reloadKey}
        caption=${filterCaption('Deliveries, newest first', active, LABELS)}
        empty=${active.length ? 'No delivery matches these filters.' : 'No webhook delivery yet.'}
      />
    </div>
    ${
      filters.endpoint_id
        ? html`<${RecoverForm}
            key=${filters.endpoint_id}
            path=${`/admin/webhook-endpoints/${enc(filters.endpoint_id)}/recover`}
            endpointId=${filters.endpoint_id}
            logLink=${`/console/deliveries?endpoint_id=${enc(filters.endpoint_id)}`}
            onRecovered=${() => setReloadKey((n) => n + 1)}
          />`
        : null
    }`;
}
