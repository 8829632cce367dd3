// The event browser (docs/guides/portal.md): every client's events newest first in server pages (GET
// /api/admin/events), filtered by type (from the event catalogue), order id and time; the filters live
// in the URL query under the API's names. One event shows its data and links to its deliveries in the
// delivery log.
import { html, useEffect, useState } from '../html.js';
import { api, enc } from '../api.js';
import { useCatalogue } from '../catalogue.js';
import { DataTable, ErrorBox, Field, Loading } from '../components.js';
import {
  FilterActions,
  filterCaption,
  TimeRangeFields,
  Time,
  useFilterForm,
  useUrlFilters,
  withQuery,
} from './operator-common.js';
import { typeOptions } from './log-common.js';

const FILTERS = ['type', 'order_id', 'since', 'until'];
const LABELS = { order_id: 'order' };

function Filters({ query, types, onApply }) {
  const { form, set, submit } = useFilterForm(query, onApply);
  return html`<form role="search" aria-label="Events" class="filters" onSubmit=${submit}>
    <${Field}
      label="Event type"
      type="select"
      value=${form.type}
      onInput=${set('type')}
      options=${typeOptions(types, form.type)}
    />
    <${Field}
      label="Order ID"
      value=${form.order_id}
      onInput=${set('order_id')}
      inputmode="numeric"
      autocomplete="off"
    />
    <${TimeRangeFields}
      form=${form}
      set=${set}
      labels=${['Occurred since', 'Occurred until']}
      hints=${['Your local time; events at or after it.', 'Your local time; events before it.']}
    />
    <${FilterActions} onClear=${() => onApply({})} />
  </form>`;
}

/** "1 pending, 2 succeeded, 0 failed", linking to the event's deliveries in the log. */
function Counts({ event: e }) {
  const { Pending, Succeeded, Failed } = e.Deliveries;
  const text = `${Pending} pending, ${Succeeded} succeeded, ${Failed} failed`;
  if (Pending + Succeeded + Failed === 0) return 'none';
  return html`<a href=${`/console/deliveries?event_id=${enc(e.Id)}`} aria-label=${`Deliveries of ${e.Id}: ${text}`}
    >${text}</a
  >`;
}

const orderOf = (e) => (e.OrderId === null ? '—' : e.OrderId);
const clientOf = (e) => (e.ClientId === null ? '—' : html`<code>${e.ClientId}</code>`);

const COLUMNS = [
  { label: 'Occurred (UTC)', value: (e) => html`<${Time} value=${e.OccurredAtUtc} />` },
  { label: 'Type', value: (e) => html`<a href=${`/console/events/${enc(e.Id)}`}>${e.Type}</a>` },
  { label: 'Event', value: (e) => html`<code>${e.Id}</code>` },
  { label: 'Client', value: clientOf },
  { label: 'Order', value: orderOf },
  { label: 'Deliveries', value: (e) => html`<${Counts} event=${e} />` },
];

export function EventsPage() {
  const { filters, active, key, apply } = useUrlFilters(FILTERS);
  const catalogue = useCatalogue();
  const path = withQuery('/admin/events?limit=20', filters);
  // Keyed by the URL's filters only: the catalogue arriving must not wipe what the user is typing.
  return html`<${ErrorBox} error=${catalogue.error} />
    <${Filters} key=${key} query=${filters} types=${catalogue.types ?? []} onApply=${apply} />
    <div class="log-list">
      <${DataTable}
        path=${path}
        columns=${COLUMNS}
        caption=${filterCaption('Events, newest first', active, LABELS)}
        empty=${active.length ? 'No event matches these filters.' : 'No event yet.'}
      />
    </div>`;
}

export function EventPage({ params }) {
  const [state, setState] = useState({ loading: true });
  const load = async () => {
    setState({ loading: true });
    try {
      setState({ event: await api(`/admin/events/${enc(params.id)}`) });
    } catch (error) {
      setState({ error });
    }
  };
  useEffect(() => {
    load();
  }, [params.id]);
  const back = html`<p><a href="/console/events">All events</a></p>`;
  if (state.loading) return html`${back}<${Loading} label="Loading the event…" />`;
  if (state.error) return html`${back}<${ErrorBox} error=${state.error} onRetry=${load} />`;
  const e = state.event;
  const { Pending, Succeeded, Failed } = e.Deliveries;
  return html`${back}
    <section class="panel" aria-labelledby="event-title">
      <h2 id="event-title">Event <code>${e.Id}</code></h2>
      <dl class="details">
        <dt>Type</dt>
        <dd>${e.Type}</dd>
        <dt>Occurred</dt>
        <dd><${Time} value=${e.OccurredAtUtc} /></dd>
        <dt>Client</dt>
        <dd>${clientOf(e)}</dd>
        <dt>Order</dt>
        <dd>${orderOf(e)}</dd>
        <dt>Deliveries</dt>
        <dd>${Pending} pending, ${Succeeded} succeeded, ${Failed} failed</dd>
      </dl>
      <div class="actions">
        <a class="button-link" href=${`/console/deliveries?event_id=${enc(e.Id)}`}>Deliveries of this event</a>
        ${
          e.OrderId === null
            ? null
            : html`<a class="button-link" href=${`/console/events?order_id=${e.OrderId}`}
                >Events of order ${e.OrderId}</a
              >`
        }
      </div>
    </section>
    <section aria-labelledby="data-title">
      <h2 id="data-title">Data</h2>
      <pre class="json">${JSON.stringify(e.Data, null, 2)}</pre>
    </section>`;
}
